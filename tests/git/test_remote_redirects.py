"""An HTTP remote that answers with a redirect: git is never led anywhere the server did not check.

The attack: a remote on a host the token is *not* offered to answers with 301/302 to a host it *is* offered
to; git following it would send the operator's token there and push, and the reply would name the first
URL. The server does not follow redirects at all (``http.followRedirects=false``), on any host: the
call is refused saying the remote redirected, nothing reaches where it leads, and the URL in every reply
is the one git contacted.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from tests.git.helpers import git
from tests.git.remote_setup import commit, head_of, remote_server
from tests.git.smart_http import TOKEN, Recorded, SmartHttpRemote, _handler, bare_clone, have_http_backend
from tests.harness import open_session

pytestmark = pytest.mark.skipif(not have_http_backend(), reason="git-http-backend is not installed")

TOKEN_ENV = "DOCKYARD_TEST_REMOTE_TOKEN"


class Redirector:
    """An HTTP server on ``host`` answering every request with ``status`` and a Location under ``target``
    (the same path and query)."""

    def __init__(self, host: str, target: str, status: int) -> None:
        self.paths: list[str] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: object) -> None:
                pass

            def _redirect(self) -> None:
                outer.paths.append(self.path)
                length = int(self.headers.get("Content-Length") or 0)
                if length:
                    self.rfile.read(length)
                self.send_response(status)
                self.send_header("Location", target + self.path)
                self.send_header("Content-Length", "0")
                self.end_headers()

            do_GET = do_POST = _redirect

        self._server = ThreadingHTTPServer((host, 0), Handler)
        self._server.daemon_threads = True

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def __enter__(self) -> Redirector:
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()


@pytest.fixture
def token_host(remotes, tmp_path):
    """The token host: a smart-HTTP remote on 127.0.0.1 holding a bare copy of the project."""
    served = tmp_path / "http"
    served.mkdir()
    bare_clone(remotes.origin, served, "project")
    with SmartHttpRemote(served) as remote:
        yield remote


def server_for(remotes, token_host: SmartHttpRemote):
    return remote_server(
        remotes,
        token=TOKEN,
        token_env=TOKEN_ENV,
        token_hosts=(token_host.url.removeprefix("http://"),),
    )


@pytest.mark.parametrize(("tool", "status"), [("git_fetch", 301), ("git_push", 302)])
async def test_a_redirect_to_the_token_host_is_refused_and_nothing_reaches_it(
    remotes, token_host, era, tool, status
):
    git(remotes.work, "checkout", "-q", "-b", "feature")
    commit(remotes.work, "mine.txt")
    with Redirector("127.0.0.2", token_host.url, status) as elsewhere:
        git(remotes.work, "remote", "add", "elsewhere", f"{elsewhere.url}/project.git")
        async with open_session(server_for(remotes, token_host), era=era) as session:
            text = await session.call_error(tool, {"remote": "elsewhere"})
    assert elsewhere.paths, "the remote was contacted"
    assert token_host.requests == []  # neither the token nor anything else went where it led
    assert head_of(token_host.root / "project.git", "refs/heads/feature") is None
    assert text.startswith("Error (permission_denied)")
    assert f"redirect (HTTP {status})" in text and f"{elsewhere.url}/project.git" in text
    assert "does not follow redirects" in text and "git remote set-url" in text
    assert TOKEN not in text and token_host.url not in text


def moving_remote(root, moved: str) -> SmartHttpRemote:
    """A smart-HTTP remote that answers ``/<moved>.git/…`` with 301 to ``/project.git/…`` on itself."""
    remote = SmartHttpRemote(root)
    serving = _handler(remote)

    class Moving(serving):
        def _serve(self) -> None:
            if self.path.startswith(f"/{moved}.git/"):
                remote.requests.append(Recorded(self.command, self.path, dict(self.headers.items()), 301))
                self.send_response(301)
                self.send_header("Location", "/project.git/" + self.path.removeprefix(f"/{moved}.git/"))
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            super()._serve()

    server = ThreadingHTTPServer(("127.0.0.1", 0), Moving)
    server.daemon_threads = True
    remote._server = server
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return remote


async def test_a_redirect_on_the_token_host_itself_is_refused_too(remotes, tmp_path, era):
    served = tmp_path / "http"
    served.mkdir()
    bare_clone(remotes.origin, served, "project")
    remote = moving_remote(served, "old")
    try:
        git(remotes.work, "remote", "add", "moved", f"{remote.url}/old.git")
        git(remotes.work, "checkout", "-q", "-b", "feature")
        commit(remotes.work, "mine.txt")
        async with open_session(server_for(remotes, remote), era=era) as session:
            texts = [await session.call_error("git_fetch", {"remote": "moved"})]
            texts.append(await session.call_error("git_push", {"remote": "moved"}))
            # Set to where it leads, the same remote works: the refusal is about the redirect alone.
            git(remotes.work, "remote", "set-url", "moved", f"{remote.url}/project.git")
            pushed = (await session.call_ok("git_push", {"remote": "moved"})).data
    finally:
        remote.stop()
    for text in texts:
        assert text.startswith("Error (permission_denied)") and "redirect (HTTP 301)" in text
        assert f"{remote.url}/old.git" in text and TOKEN not in text
    assert all(r.path.startswith("/old.git/") for r in remote.requests[:2])
    assert pushed["url"] == f"{remote.url}/project.git" and pushed["outcome"] == "new branch"
    assert head_of(served / "project.git", "refs/heads/feature") is not None
    assert TOKEN not in json.dumps(pushed)


async def test_the_repositorys_config_cannot_turn_redirects_back_on(remotes, token_host, era):
    with Redirector("127.0.0.2", token_host.url, 301) as elsewhere:
        git(remotes.work, "remote", "add", "elsewhere", f"{elsewhere.url}/project.git")
        git(remotes.work, "config", "http.followRedirects", "true")
        git(remotes.work, "config", f"http.{elsewhere.url}/.followRedirects", "true")
        async with open_session(server_for(remotes, token_host), era=era) as session:
            text = await session.call_error("git_fetch", {"remote": "elsewhere"})
    assert text.startswith("Error (permission_denied)") and "redirect (HTTP 301)" in text
    assert elsewhere.paths and token_host.requests == []
