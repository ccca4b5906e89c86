"""The github toolset (off by default, served only with a token): a repository's issues imported as tasks.

The client (``github.py``) and the store are used in a worker thread; nothing of either is imported
until a call needs it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Literal

from pydantic import Field

from dockyard_shared import ADDITIVE
from dockyard_shared.offload import run_in_thread
from dockyard_shared.toolsets import ToolRegistrar
from dockyard_shared.untrusted import fence

from ..actors import Actors
from ..models import IssueImport, IssueImportResult
from .params import ProjectKey

if TYPE_CHECKING:
    from ..settings import Settings
    from ..store import TaskStore

__all__ = ["register"]


def register(tools: ToolRegistrar, store: TaskStore, actors: Actors, settings: Settings) -> None:
    @tools.tool(annotations=ADDITIVE)
    async def import_github_issues(
        repo: Annotated[str, Field(description="owner/name")],
        project: ProjectKey,
        state: Literal["open", "closed", "all"] = "open",
        page: Annotated[int, Field(ge=1)] = 1,
        limit: Annotated[int, Field(ge=1, le=100)] = 30,
    ) -> IssueImportResult:
        """Import a page of a GitHub repo's issues as tasks linked back by URL; re-import updates them.

        Use when: the team's work is in GitHub issues.
        Not for: pull requests (skipped).
        Returns: per issue: task, action, fenced title; next_page.
        Limits: ≤ 100 a call; closed issue → done, reopened → todo.
        """
        from ..github import GitHubIssues

        client = GitHubIssues(
            settings.github_token or "", settings.github_api_url, token_env=settings.github_token_env
        )
        actor = actors.current()

        def work() -> IssueImportResult:
            found = client.issues(repo, state=state, labels="", page=page, per_page=limit)
            done = store.upsert_issues(project, found.issues, actor=actor, workstream=None)
            source = "GitHub issue title"
            items = [
                IssueImport(issue=issue.number, task=task, action=action, title=fence(issue.title, source))
                for issue, task, action in done
            ]
            count = {a: sum(1 for i in items if i.action == a) for a in ("created", "updated", "unchanged")}
            note = f"More issues: call again with page={page + 1}." if found.has_next else None
            return IssueImportResult(
                project=project.upper(),
                items=items,
                **count,
                skipped_pull_requests=found.pull_requests,
                next_page=page + 1 if found.has_next else None,
                note=note,
            )

        return await run_in_thread(work)
