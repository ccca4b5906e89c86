"""The config overrides that neutralise every command a git config can name, and how they reach git.

:class:`.layout.Layouts` picks, for each git directory, which of them a command needs; they are passed
through the environment (``GIT_CONFIG_COUNT``, ``GIT_CONFIG_KEY_<n>``, ``GIT_CONFIG_VALUE_<n>``), which
takes a key verbatim, where ``-c key=value`` splits at the first ``=`` and so cannot name a driver called
``a=b``.
"""

from __future__ import annotations

__all__ = ["ALWAYS_OVERRIDDEN", "COMMAND_KEYS", "FIXED_OVERRIDES", "override_environment"]

# Set on every call that may write, whether or not a config mentions them (some have risky defaults:
# hooks live in $GIT_DIR/hooks unless hooksPath says otherwise).
FIXED_OVERRIDES = {
    "core.hooksPath": "/dev/null",
    "core.fsmonitor": "false",
    "core.fsmonitorHookVersion": "0",
    "core.pager": "cat",
    "core.editor": "false",
    "core.askPass": "",
    "core.sshCommand": "false",
    "core.gitProxy": "",
    "core.alternateRefsCommand": "",
    "core.excludesFile": "/dev/null",
    "core.attributesFile": "/dev/null",
    "sequence.editor": "false",
    "diff.external": "",
    "interactive.diffFilter": "cat",
    "credential.helper": "",
    "protocol.allow": "never",
    "gpg.program": "false",
    "gpg.openpgp.program": "false",
    "gpg.ssh.program": "false",
    "gpg.x509.program": "false",
    "gpg.ssh.defaultKeyCommand": "false",
    "commit.gpgSign": "false",
    "tag.gpgSign": "false",
    "log.showSignature": "false",
    "merge.verifySignatures": "false",
    "gc.auto": "0",
    "maintenance.auto": "false",
    "color.ui": "never",
    "blame.ignoreRevsFile": "",
    # Submodules: never looked into (the runner also passes --ignore-submodules and the like on the
    # command line, which beats a submodule.<name>.ignore in .gitmodules; these cover the rest).
    "status.submoduleSummary": "false",
    "submodule.recurse": "false",
    "diff.submodule": "short",
    "diff.ignoreSubmodules": "all",
    "fetch.recurseSubmodules": "false",
    # Which regex engine log --grep/--author use: the one the tools say, not one a config picks.
    "grep.patternType": "default",
    "grep.extendedRegexp": "false",
}

# Overridden for read-only commands too, whether or not a config sets them: the default of hooksPath is
# the repository's own hooks folder (git status runs post-index-change when it refreshes the index), and
# fsmonitor is consulted by every command that reads the index.
ALWAYS_OVERRIDDEN = ("core.hooksPath", "core.fsmonitor")

# Keys that name a program, matched on (section, last part) whatever the subsection — ``filter.<driver>.clean``,
# ``credential.<url>.helper``, ``sendemail.<identity>.toCmd`` — each with the value that makes it harmless.
# Every one found in a config file is overridden (``pager.<command>`` too). An empty filter command means
# "no filter"; elsewhere an empty command only makes git fail to start it.
COMMAND_KEYS: dict[tuple[str, str], str] = {
    ("filter", "clean"): "",
    ("filter", "smudge"): "",
    ("filter", "process"): "",
    ("filter", "required"): "false",  # a required filter whose command was blanked would fail every call
    ("diff", "command"): "",
    ("diff", "textconv"): "",
    ("merge", "driver"): "",
    ("trailer", "command"): "",
    ("trailer", "cmd"): "",
    ("credential", "helper"): "",  # an empty value also empties the helper list
    ("protocol", "allow"): "never",  # protocol.<name>.allow=always would beat protocol.allow=never
    ("remote", "uploadpack"): "git-upload-pack",
    ("remote", "receivepack"): "git-receive-pack",
    ("remote", "vcs"): "",  # a remote helper, found by a name the config chooses
    ("gpg", "program"): "false",
    ("gpg", "defaultkeycommand"): "false",
    ("difftool", "cmd"): "",
    ("difftool", "path"): "",
    ("mergetool", "cmd"): "",
    ("mergetool", "path"): "",
    ("man", "cmd"): "",
    ("man", "path"): "",
    ("browser", "cmd"): "",
    ("browser", "path"): "",
    ("guitool", "cmd"): "",
    ("submodule", "update"): "none",  # "!command" runs a command on submodule update
    ("submodule", "ignore"): "all",
    ("tar", "command"): "false",  # git archive's compressors
    ("sendemail", "tocmd"): "",
    ("sendemail", "cccmd"): "",
    ("sendemail", "headercmd"): "",
    ("sendemail", "smtpserver"): "",  # an absolute path is run as sendmail
    ("hook", "command"): "true",  # config-defined hooks of newer git releases
}


def override_environment(common_dir: str, overrides: dict[str, str]) -> dict[str, str]:
    """``GIT_COMMON_DIR`` and ``overrides`` as git's environment config (keys verbatim, see above)."""
    environment = {"GIT_COMMON_DIR": common_dir, "GIT_CONFIG_COUNT": str(len(overrides))}
    for index, (name, value) in enumerate(overrides.items()):
        environment[f"GIT_CONFIG_KEY_{index}"] = name
        environment[f"GIT_CONFIG_VALUE_{index}"] = value
    return environment
