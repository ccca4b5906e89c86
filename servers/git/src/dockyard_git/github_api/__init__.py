"""Access to a repository's GitHub pull requests, issues, review threads and CI job logs (PyGithub, and
GraphQL through PyGithub's requester), and the github_write toolset's comments, replies and thread
resolution (:mod:`.review`), which act only on the repository the tool was called for.

The token comes from an environment variable and lives only inside the PyGithub client: it is never part of
a result, an error or a log line (PyGithub masks the Authorization header in its debug log).

Everything a GitHub user controls is untrusted (see :mod:`dockyard_shared.untrusted`): free text (titles,
bodies, comments, patches) is always fenced; identifier-like fields (logins, labels, branch, file and check
names) are plain only when simple identifiers. Values GitHub itself generates (numbers, states, dates, SHAs) are plain; URLs
are plain when they look like one and dropped otherwise. Our own words (truncation marks) go after a fence.

Every reply is bounded (caps in :mod:`..settings`), and every cut is marked and says how to get the rest:
lists are one GitHub page (30); caps count the characters a field takes as JSON, so text full of quotes or
backslashes cannot double a reply; comments on a page and patches in a reply share a total budget fairly
(short ones whole, long ones cut evenly), and that budget is what the rest of the reply leaves under
REPLY_BUDGET: with every field hostile and at its cap a reply still stays under 100,000 characters.

A job log is the one thing not read through PyGithub: it is streamed, without the token, from the
download link GitHub redirects to (:mod:`.actions`). The reader is :class:`.reader.GitHubReader`. This package module imports nothing: the GitHub toolset
imports :mod:`.models` when it is installed, and PyGithub (:mod:`.client`) waits for the first use.
"""
