"""What a command that merges, rebases, picks or reverts adds to the runner's hardening (see runner.py).

Never an editor: ``GIT_EDITOR`` and ``GIT_SEQUENCE_EDITOR`` are ``:``, which git treats as "keep the
message as it is" without starting anything. Never a merge driver the repository names: every
``merge.<driver>.driver`` its config files set is replaced by git's own three-way merge of the file
(``git merge-file``), so a ``.gitattributes`` ``merge=<driver>`` line gets ordinary conflict markers instead
of the repository's program. Never a recorded resolution (``rerere``), an automatic stash, an autosquash or
a move of other branches (``rebase.updateRefs``) the repository's config turns on. The layout's overrides
(hooks, fsmonitor, filters, gpg, ``core.editor``, ``sequence.editor``) stay; these come after them.
"""

from __future__ import annotations

from collections.abc import Mapping

from .network import appended_config

__all__ = ["integration_environment"]

# git's own text merge for a file, with the marker size git asks for.
_TEXT_MERGE = "git merge-file --marker-size=%L %A %O %B"

_FIXED = (
    ("rerere.enabled", "false"),
    ("rerere.autoUpdate", "false"),
    ("merge.autoStash", "false"),
    ("rebase.autoStash", "false"),
    ("rebase.autoSquash", "false"),
    ("rebase.updateRefs", "false"),
    ("rebase.missingCommitsCheck", "ignore"),
    ("rebase.abbreviateCommands", "false"),
    ("merge.verifySignatures", "false"),
    ("commit.gpgSign", "false"),
    ("tag.forceSignAnnotated", "false"),
    ("merge.renormalize", "false"),
    ("commit.verbose", "false"),
)


def integration_environment(env: Mapping[str, str], config_names: frozenset[str]) -> dict[str, str]:
    """The runner's environment ``env`` for one merge, rebase, cherry-pick or revert command."""
    # Any merge.<driver>.<key> defines a driver (one without a command line would make git die): each
    # gets git's text merge as its command.
    drivers = {}
    for name in sorted(config_names):
        section, _, rest = name.partition(".")
        driver, dot, _ = rest.rpartition(".")
        if section.lower() == "merge" and dot and driver:
            drivers[f"{section}.{driver}.driver"] = _TEXT_MERGE
    return {
        **appended_config(env, [*_FIXED, *drivers.items()]),
        "GIT_EDITOR": ":",
        "GIT_SEQUENCE_EDITOR": ":",
    }
