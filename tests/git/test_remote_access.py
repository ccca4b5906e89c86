"""The remote URL policy, credential display and the network environment, as plain functions."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from dockyard_git.gitcmd.network import NetworkAccess, network_environment
from dockyard_git.remotes.access import OperatorGit, RemoteAccess, classify, refused_config, scrub, shown_url
from dockyard_git.settings import RemoteSettings
from dockyard_shared import NotFound, PermissionDenied
from tests.git.helpers import git, make_repo

ALL = ("https", "ssh", "http", "file")


def classified(url: str, root: Path, protocols=ALL, cwd: Path | None = None):
    return classify(
        url,
        cwd=cwd or root,
        protocols=protocols,
        inside_roots=lambda path: path == root or root in path.parents,
        refusal=lambda git_dir: None,
    )


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("https://ada:s3cret@example.com/x.git", "https://example.com/x.git"),
        ("https://ghp_abc@example.com/x.git", "https://example.com/x.git"),
        ("http://u:p@127.0.0.1:8080/x.git", "http://127.0.0.1:8080/x.git"),
        ("ssh://git:pw@example.com/x.git", "ssh://git@example.com/x.git"),
        ("git@example.com:team/x.git", "git@example.com:team/x.git"),
        ("fatal: unable to access 'https://u:tok@h/x/': 403", "fatal: unable to access 'https://h/x/': 403"),
    ],
)
def test_urls_are_shown_without_credentials(url, shown):
    assert shown_url(url) == shown


def test_scrub_removes_secrets_anywhere():
    assert scrub("token abc123 in https://x:abc123@h/", ["abc123"]) == "token [redacted] in https://h/"


@pytest.mark.parametrize(
    ("url", "protocol"),
    [
        ("https://github.com/a/b.git", "https"),
        ("HTTPS://github.com/a/b.git", "https"),
        ("http://127.0.0.1:9/a.git", "http"),
        ("ssh://git@github.com/a/b.git", "ssh"),
        ("git+ssh://git@github.com/a/b.git", "ssh"),
        ("git@github.com:a/b.git", "ssh"),
        ("[git@github.com:22]:a/b.git", "ssh"),
    ],
)
def test_network_urls_are_classified_as_git_would(url, protocol, tmp_path):
    assert classified(url, tmp_path).protocol == protocol


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("ext::sh -c touch% /tmp/x", "transport helper 'ext'"),
        ("fd::3", "transport helper 'fd'"),
        ("https::https://example.com/x", "transport helper 'https'"),
        ("git://example.com/x.git", "protocol 'git'"),
        ("ftp://example.com/x.git", "protocol 'ftp'"),
        ("hg://example.com/x", "protocol 'hg'"),
        ("ssh://-oProxyCommand=x/y", "no usable host"),
        ("-oProxyCommand=x:y", "no usable host"),
        ("https:///x.git", "names no host"),
        ("https://example.com/x\ny", "control characters"),
        ("", "empty"),
    ],
)
def test_urls_that_run_programs_or_are_malformed_are_refused(url, reason, tmp_path):
    with pytest.raises(PermissionDenied, match=reason.replace("(", r"\(")):
        classified(url, tmp_path)


def test_a_protocol_the_operator_did_not_list_is_refused_naming_the_flag(tmp_path):
    with pytest.raises(PermissionDenied, match="--remote-protocol http"):
        classified("http://example.com/x.git", tmp_path, protocols=("https", "ssh"))
    with pytest.raises(PermissionDenied, match="--remote-protocol file"):
        classified(str(tmp_path), tmp_path, protocols=("https", "ssh"))


def test_local_remotes_are_found_where_git_finds_them_and_only_inside_the_roots(tmp_path):
    root = tmp_path / "root"
    work = make_repo(root / "work")
    bare = root / "bare.git"
    git(root, "clone", "-q", "--bare", str(work), str(bare))
    assert classified(str(bare), root).local == bare
    assert classified(str(root / "bare"), root).local == bare  # git adds .git
    assert classified(str(work), root).local == work / ".git"
    assert classified("../bare.git", root, cwd=work).local == bare
    assert classified(f"file://{bare}", root).local == bare
    assert classified(f"file://anyhost{str(bare).replace('bare', 'b%61re')}", root).local == bare
    outside = tmp_path / "outside.git"
    git(tmp_path, "clone", "-q", "--bare", str(work), str(outside))
    (root / "link.git").symlink_to(outside)
    for url in (str(outside), f"file://{outside}", "../../outside.git", str(root / "link.git")):
        with pytest.raises(PermissionDenied, match="outside the folders"):
            classified(url, root, cwd=work)
    with pytest.raises(PermissionDenied, match="home folder"):
        classified("~/bare.git", root)
    with pytest.raises(NotFound):
        classified(str(root / "nothing"), root)


def test_tls_settings_of_the_repository_are_named_in_the_refusal():
    assert refused_config(frozenset({"http.https://h/.sslcainfo", "user.name"})) is not None
    assert "sslkey" in refused_config(frozenset({"http.sslkey"}))
    assert refused_config(frozenset({"http.postbuffer", "http.sslverify", "remote.origin.url"})) is None


def test_the_network_environment_appends_overrides_and_resets_keys_the_repository_sets():
    env = {"GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "core.hooksPath", "GIT_CONFIG_VALUE_0": "/dev/null"}
    access = NetworkAccess(
        protocols=("file", "https"),
        overrides=(("credential.helper", ""), ("push.followTags", "false")),
        key_overrides={("http", "proxy"): ""},
        inherited={"SSH_AUTH_SOCK": "/tmp/agent", "GIT_CONFIG_COUNT": "99"},
        variables={"GIT_SSH_COMMAND": "ssh -o BatchMode=yes"},
    )
    result = network_environment(env, frozenset({"http.https://h/.proxy", "user.name"}), access)
    assert result["GIT_CONFIG_COUNT"] == "4" and result["GIT_ALLOW_PROTOCOL"] == "file:https"
    assert [result[f"GIT_CONFIG_KEY_{i}"] for i in range(4)] == [
        "core.hooksPath",
        "http.https://h/.proxy",
        "credential.helper",
        "push.followTags",
    ]
    assert result["SSH_AUTH_SOCK"] == "/tmp/agent" and result["GIT_SSH_COMMAND"] == "ssh -o BatchMode=yes"
    assert "secret" not in repr(NetworkAccess(protocols=(), variables={"T": "secret"}))


def test_the_operators_own_helpers_and_ssh_command_are_read_from_their_config_only(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    environ = {
        "PATH": os.environ["PATH"],
        "HOME": str(home),
        "SSH_AUTH_SOCK": "/tmp/agent",
        "GIT_CONFIG_NOSYSTEM": "1",  # this machine's system config names a helper too
        "GIT_TRACE_CURL": "1",  # dropped: it would log the Authorization header
        "GIT_SSL_CAINFO": "/etc/ssl/ca.pem",  # kept
    }
    subprocess.run(
        ["git", "config", "--global", "credential.helper", "store"], env=environ, check=True, cwd=tmp_path
    )
    subprocess.run(
        ["git", "config", "--global", "credential.https://h.example.helper", "!echo"], env=environ, check=True
    )
    subprocess.run(["git", "config", "--global", "core.sshCommand", "ssh -i key"], env=environ, check=True)
    work = make_repo(tmp_path / "work")  # the server's working directory: its config must not count
    git(work, "config", "credential.helper", "!touch /tmp/never")
    previous = os.getcwd()
    os.chdir(work)
    try:
        operator = OperatorGit.discover("git", environ)
    finally:
        os.chdir(previous)
    assert operator.helpers == (
        ("credential.helper", "store"),
        ("credential.https://h.example.helper", "!echo"),
    )
    assert operator.ssh_command == "ssh -i key" and operator.ssh_variant == "auto"
    assert operator.environment == {
        "PATH": os.environ["PATH"],
        "HOME": str(home),
        "SSH_AUTH_SOCK": "/tmp/agent",
        "GIT_SSL_CAINFO": "/etc/ssl/ca.pem",
    }
    assert OperatorGit.discover("git", {**environ, "GIT_SSH_COMMAND": "my-ssh"}).ssh_command == "my-ssh"


def test_the_token_helper_is_configured_only_for_the_named_hosts_and_never_holds_the_token(tmp_path):
    settings = RemoteSettings(
        protocols=("https", "http"), token="tok-123", token_hosts=("git.example", "h:8443")
    )
    access = RemoteAccess(settings, "git", "/usr/lib/git-core", OperatorGit(environment={}))
    network = access.network("origin", [classified("https://git.example/x.git", tmp_path)], fetching=True)
    helpers = [(key, value) for key, value in network.overrides if key.endswith(".helper")]
    assert [key for key, _ in helpers] == [
        "credential.helper",
        "credential.https://git.example.helper",
        "credential.http://git.example.helper",
        "credential.https://h:8443.helper",
        "credential.http://h:8443.helper",
    ]
    assert not any("tok-123" in value for _, value in network.overrides)
    assert network.variables["DOCKYARD_GIT_REMOTE_TOKEN"] == "tok-123"
    assert network.protocols == ("https",) and network.max_file_bytes == settings.max_fetch_bytes
    assert access.network("origin", [], fetching=False).max_file_bytes is None
