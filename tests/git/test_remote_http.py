"""The remote toolset against a real smart-HTTP remote on 127.0.0.1 (``git http-backend`` behind token
auth): the token from the variable --remote-token-env names reaches only the hosts of --remote-token-host,
and never a reply, the server's log or the audit log."""

from __future__ import annotations

import base64
import json
import socket
from pathlib import Path

import pytest

from tests.git.helpers import git
from tests.git.remote_setup import commit, head_of, operator_environment, remote_server
from tests.git.smart_http import TOKEN, SmartHttpRemote, bare_clone, have_http_backend
from tests.harness import LEGACY, MODERN, Launch, open_session

pytestmark = pytest.mark.skipif(not have_http_backend(), reason="git-http-backend is not installed")

TOKEN_ENV = "DOCKYARD_TEST_REMOTE_TOKEN"


@pytest.fixture
def web(remotes, tmp_path):
    """The served clone with a second remote, ``web``, over smart HTTP."""
    served = tmp_path / "http"
    served.mkdir()
    bare_clone(remotes.origin, served, "project")
    with SmartHttpRemote(served) as remote:
        git(remotes.work, "remote", "add", "web", f"{remote.url}/project.git")
        yield remote


def host_of(remote: SmartHttpRemote) -> str:
    return remote.url.removeprefix("http://")


def sent_credentials(remote: SmartHttpRemote) -> set[str]:
    """The Basic credentials of every request the remote received, decoded."""
    found = set()
    for request in remote.requests:
        header = request.headers.get("Authorization", "")
        if header.startswith("Basic "):
            found.add(base64.b64decode(header[6:]).decode())
    return found


async def test_fetch_and_push_over_https_like_http_with_the_operators_token(remotes, web, era):
    theirs = commit(remotes.others, "theirs.txt")
    git(remotes.others, "push", "-q", f"{web.root}/project.git", "main")
    server = remote_server(remotes, token=TOKEN, token_env=TOKEN_ENV, token_hosts=(host_of(web),))
    git(remotes.work, "checkout", "-q", "-b", "feature")
    mine = commit(remotes.work, "mine.txt")
    async with open_session(server, era=era) as session:
        fetched = (await session.call_ok("git_fetch", {"remote": "web"})).data
        pushed = (await session.call_ok("git_push", {"remote": "web", "set_upstream": True})).data
        texts = [(await session.call_ok("git_remotes")).text]
    assert fetched["url"] == f"{web.url}/project.git"
    assert any(r["ref"] == "web/main" and r["new"] == theirs for r in fetched["moved"])
    assert (
        pushed["outcome"] == "new branch" and head_of(web.root / "project.git", "refs/heads/feature") == mine
    )
    assert sent_credentials(web) == {f"x-access-token:{TOKEN}"}
    assert TOKEN not in json.dumps([fetched, pushed]) + "".join(texts)
    assert not any(TOKEN in request.path for request in web.requests)


async def test_a_wrong_token_is_a_clear_error_that_never_shows_it(remotes, web, era):
    wrong = "dockyard-wrong-" + "x1y2" * 6
    server = remote_server(remotes, token=wrong, token_env=TOKEN_ENV, token_hosts=(host_of(web),))
    async with open_session(server, era=era) as session:
        texts = [await session.call_error("git_fetch", {"remote": "web"})]
        texts.append(await session.call_error("git_push", {"remote": "web"}))
    assert all(text.startswith("Error (permission_denied)") for text in texts)
    assert f"${TOKEN_ENV}" in texts[0] and "refused the credentials" in texts[0]
    assert not any(wrong in text for text in texts)
    assert {r.status for r in web.requests} == {401}


async def test_the_token_goes_only_to_the_hosts_the_operator_named(remotes, web, era):
    server = remote_server(remotes, token=TOKEN, token_env=TOKEN_ENV, token_hosts=("github.com",))
    async with open_session(server, era=era) as session:
        text = await session.call_error("git_fetch", {"remote": "web"})
    assert text.startswith("Error (permission_denied)") and "--remote-token-host" in text
    assert sent_credentials(web) == set()


async def test_plain_http_needs_the_operators_consent(remotes, web, era):
    server = remote_server(remotes, protocols=("https", "ssh"), token=TOKEN, token_hosts=(host_of(web),))
    async with open_session(server, era=era) as session:
        text = await session.call_error("git_fetch", {"remote": "web"})
    assert "--remote-protocol http" in text and web.requests == []


async def test_the_operators_own_credential_helper_runs_with_their_home(remotes, web, era):
    (remotes.home / "token").write_text(TOKEN)
    helper = '!f() { test "$1" = get && printf "username=ada\\npassword=%s\\n" "$(cat "$HOME/token")"; }; f'
    git(remotes.home, "config", "--file", str(remotes.home / ".gitconfig"), "credential.helper", helper)
    async with open_session(remote_server(remotes), era=era) as session:
        fetched = (await session.call_ok("git_fetch", {"remote": "web"})).data
    assert fetched["moved"] and sent_credentials(web) == {f"ada:{TOKEN}"}


async def test_the_operators_ssh_command_is_used_and_the_repositorys_is_not(remotes, era, tmp_path):
    markers = tmp_path / "markers"
    markers.mkdir()
    ssh = tmp_path / "operator-ssh"
    ssh.write_text(f'#!/bin/sh\necho "$@" > {markers / "operator"}\nexit 1\n')
    ssh.chmod(0o755)
    git(remotes.home, "config", "--file", str(remotes.home / ".gitconfig"), "core.sshCommand", str(ssh))
    git(remotes.work, "config", "core.sshCommand", f"touch {markers / 'repository'}")
    git(remotes.work, "remote", "add", "hub", "git@example.invalid:team/project.git")
    async with open_session(remote_server(remotes), era=era) as session:
        text = await session.call_error("git_fetch", {"remote": "hub"})
    assert "example.invalid" in text
    assert sorted(p.name for p in markers.iterdir()) == ["operator"]
    assert "example.invalid" in (markers / "operator").read_text()


async def test_a_remote_that_does_not_answer_is_stopped_at_the_time_limit(remotes, era):
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        git(remotes.work, "remote", "add", "silent", f"http://127.0.0.1:{silent.getsockname()[1]}/x.git")
        async with open_session(remote_server(remotes, timeout_s=2), era=era) as session:
            text = await session.call_error("git_fetch", {"remote": "silent"})
    assert text.startswith("Error (limit_exceeded)") and "did not finish within 2 s" in text


def launch_with_token(remotes, web, token: str, log: Path, audit: Path) -> Launch:
    """dockyard-git as an operator starts it, the token in its environment; stderr appended to ``log``."""
    args = (
        *("--root", str(remotes.root), "--allow-remote", "--allow-write", "--remote-protocol", "http"),
        *("--remote-token-env", TOKEN_ENV, "--remote-token-host", host_of(web)),
        *("--audit-log", str(audit), "--log-level", "DEBUG"),
    )
    launch = Launch("dockyard-git", args, env={**operator_environment(remotes.home), TOKEN_ENV: token})
    # The stdio client passes the server's stderr through; capture it by wrapping the command.
    return Launch("sh", ("-c", f'exec "$0" "$@" 2>>{log}', *launch.command()), env=launch.env)


@pytest.mark.slow
async def test_over_stdio_a_token_is_absent_from_replies_the_server_log_and_the_audit_log(
    remotes, web, tmp_path
):
    log, audit = tmp_path / "stderr.log", tmp_path / "audit.jsonl"
    wrong = "dockyard-wrong-" + "q7r8" * 6
    git(remotes.work, "checkout", "-q", "-b", "feature")
    commit(remotes.work, "mine.txt")
    refused = []
    async with open_session(launch_with_token(remotes, web, wrong, log, audit), era=LEGACY) as session:
        refused.append(await session.call_error("git_fetch", {"remote": "web"}))
        refused.append(await session.call_error("git_push", {"remote": "web"}))
        refused.append(await session.call_error("git_pull", {"remote": "web"}))
    assert all("refused the credentials" in text for text in refused)
    texts = []
    async with open_session(launch_with_token(remotes, web, TOKEN, log, audit), era=MODERN) as session:
        texts.append((await session.call_ok("git_fetch", {"remote": "web"})).text)
        texts.append((await session.call_ok("git_push", {"remote": "web"})).text)
        with_token = f"{web.url.replace('://', f'://u:{TOKEN}@')}/project.git"
        git(remotes.work, "remote", "set-url", "web", with_token)
        texts.append((await session.call_ok("git_remotes")).text)
        texts.append((await session.call_ok("git_fetch", {"remote": "web"})).text)
    records = [json.loads(line) for line in audit.read_text().splitlines()]
    assert [(r["tool"], r["outcome"]) for r in records] == [
        ("git_fetch", "error"),
        ("git_push", "error"),
        ("git_pull", "error"),
        ("git_fetch", "ok"),
        ("git_push", "ok"),
        ("git_remotes", "ok"),
        ("git_fetch", "ok"),
    ]
    assert head_of(web.root / "project.git", "refs/heads/feature") is not None
    assert "git_fetch" in log.read_text()  # the server logged the calls at DEBUG
    for secret in (wrong, TOKEN):
        assert not any(secret in text for text in refused + texts)
        assert secret not in log.read_text() and secret not in audit.read_text()
