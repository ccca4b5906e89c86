"""What a git command that talks to a remote may use, on top of the runner's hardening (see runner.py); what
it holds is decided by :mod:`..remotes.access`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

__all__ = ["NetworkAccess", "appended_config", "network_environment"]


@dataclass(frozen=True)
class NetworkAccess:
    """What one command that talks to a remote may use, on top of (never instead of) the runner's hardening."""

    protocols: tuple[str, ...]  # GIT_ALLOW_PROTOCOL: these and no other transport, whatever config says
    # Config entries appended after the layout's overrides: for a key git reads once, the last one wins;
    # for a list (credential.helper, http.extraHeader) an empty value empties it.
    overrides: tuple[tuple[str, str], ...] = ()
    # (section, last part) → value, for every such key the repository's config files set, whatever its
    # subsection: ``http.<url>.proxy`` is beaten only by an entry naming the same URL.
    key_overrides: Mapping[tuple[str, str], str] = field(default_factory=dict)
    inherited: Mapping[str, str] = field(default_factory=dict)  # the operator's environment, under ours
    variables: Mapping[str, str] = field(default_factory=dict)  # over ours (GIT_SSH_COMMAND, a token)
    timeout_s: float | None = None
    max_file_bytes: int | None = None  # RLIMIT_FSIZE of git and everything it starts

    def __repr__(self) -> str:  # never show the environment: it may hold a token
        return f"NetworkAccess(protocols={self.protocols!r})"


def appended_config(environment: Mapping[str, str], entries: Sequence[tuple[str, str]]) -> dict[str, str]:
    """``environment`` (with its GIT_CONFIG_* overrides) with ``entries`` after the ones it has."""
    result = dict(environment)
    count = int(result.get("GIT_CONFIG_COUNT", "0"))
    for index, (name, value) in enumerate(entries, start=count):
        result[f"GIT_CONFIG_KEY_{index}"] = name
        result[f"GIT_CONFIG_VALUE_{index}"] = value
    result["GIT_CONFIG_COUNT"] = str(count + len(entries))
    return result


def network_environment(
    env: Mapping[str, str], config_names: frozenset[str], network: NetworkAccess
) -> dict[str, str]:
    """The runner's environment ``env`` for one network command: the operator's environment under it, the
    overrides after its own, the protocol list and the command's variables over it."""
    by_key = []
    for name in sorted(config_names):
        section, _, rest = name.partition(".")
        value = network.key_overrides.get((section.lower(), rest.rpartition(".")[2].lower()))
        if value is not None:
            by_key.append((name, value))
    return {
        **network.inherited,
        **appended_config(env, [*by_key, *network.overrides]),
        **network.variables,
        "GIT_ALLOW_PROTOCOL": ":".join(network.protocols) or "none",
    }
