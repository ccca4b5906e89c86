"""The git server's tools by toolset, as the tests expect to see them listed."""

from __future__ import annotations

READ_TOOLS = {
    "git_repositories",
    "git_status",
    "git_log",
    "git_diff",
    "git_show",
    "git_branches",
}
SEARCH_TOOLS = {"git_blame", "git_grep"}
WRITE_TOOLS = {"git_add", "git_unstage", "git_commit", "git_create_branch", "git_checkout", "git_stash"}
GITHUB_TOOLS = {
    "github_pull_requests",
    "github_pull_request",
    "github_issues",
    "github_issue",
    "github_review_threads",
    "github_failed_job_log",
    "github_line_origin",
}
GITHUB_WRITE_TOOLS = {"github_comment", "github_reply_to_thread", "github_resolve_thread"}
REMOTE_TOOLS = {"git_remotes", "git_fetch", "git_pull", "git_push"}
WORKTREE_TOOLS = {"git_worktrees", "git_worktree_add", "git_worktree_remove", "git_worktree_prune"}
MERGING_TOOLS = {"git_merge", "git_rebase", "git_cherry_pick", "git_revert"}
TAG_TOOLS = {"git_tags", "git_tag_create", "git_tag_delete", "git_tag_verify"}
