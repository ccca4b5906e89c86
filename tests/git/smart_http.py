"""A loopback git remote over smart HTTP: ``git http-backend`` behind a small server with token auth.

What a hosting service does for ``git fetch``/``pull``/``push`` over https, on 127.0.0.1: every request
must carry HTTP Basic credentials whose password is :data:`TOKEN` (any user name, as GitHub accepts
``x-access-token:<token>``), else 401 with a ``WWW-Authenticate`` challenge; the request is then handed to
git's own CGI program, which serves the bare repositories under ``root``. Pushing is enabled (the
authenticated user is passed as ``REMOTE_USER``). Every request is recorded with its headers, so a test
can check what a client sent — and that a wrong token never came back in a reply.
"""

from __future__ import annotations

import base64
import hmac
import os
import shutil
import subprocess
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit

TOKEN = "dockyard-remote-" + "s3cr3t" * 4

_BACKEND = next(
    (
        str(candidate)
        for candidate in (
            Path(subprocess.run(["git", "--exec-path"], capture_output=True, text=True).stdout.strip())
            / "git-http-backend",
        )
        if candidate.exists()
    ),
    None,
)


@dataclass
class Recorded:
    method: str
    path: str
    headers: dict[str, str]
    status: int = 0


@dataclass
class SmartHttpRemote:
    """Serves the bare repositories under ``root`` at ``url`` + ``/<name>.git``."""

    root: Path
    token: str = TOKEN
    requests: list[Recorded] = field(default_factory=list)
    # A remote that stalls mid-download: while this event is not set, an answer over 100 kB (the pack of a
    # fetch) stops after its first half until the event is set or the remote stops.
    stall: threading.Event | None = None
    stalled: threading.Event = field(default_factory=threading.Event)  # set once an answer is held
    _stopping: threading.Event = field(default_factory=threading.Event)
    _server: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        assert self._server is not None
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> SmartHttpRemote:
        if _BACKEND is None:
            raise RuntimeError("git-http-backend is not installed beside git")
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    def __enter__(self) -> SmartHttpRemote:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def authorised(self, header: str | None) -> str | None:
        """The user name of valid Basic credentials, else ``None``."""
        if not header or not header.startswith("Basic "):
            return None
        try:
            user, _, password = base64.b64decode(header[6:], validate=True).decode().partition(":")
        except (ValueError, UnicodeDecodeError):
            return None
        return (user or "token") if hmac.compare_digest(password.encode(), self.token.encode()) else None


def _handler(remote: SmartHttpRemote) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: object) -> None:  # quiet: tests read `requests`
            pass

        def do_GET(self) -> None:
            self._serve()

        def do_POST(self) -> None:
            self._serve()

        def _serve(self) -> None:
            record = Recorded(self.command, self.path, dict(self.headers.items()))
            remote.requests.append(record)
            user = remote.authorised(self.headers.get("Authorization"))
            if user is None:
                record.status = 401
                body = b"Authentication required\n"
                self.send_response(401)
                self.send_header("WWW-Authenticate", 'Basic realm="dockyard test remote"')
                self.send_header("Content-Type", "text/plain")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
                return
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            if not length and self.headers.get("Transfer-Encoding", "").lower() == "chunked":
                body = self._read_chunked()
            parts = urlsplit(self.path)
            env = {
                "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
                "GIT_PROJECT_ROOT": str(remote.root),
                "GIT_HTTP_EXPORT_ALL": "1",
                "GIT_CONFIG_NOSYSTEM": "1",
                "GIT_CONFIG_GLOBAL": "/dev/null",
                "REQUEST_METHOD": self.command,
                "PATH_INFO": parts.path,
                "QUERY_STRING": parts.query,
                "CONTENT_TYPE": self.headers.get("Content-Type", ""),
                "CONTENT_LENGTH": str(len(body)),
                "REMOTE_USER": user,
                "REMOTE_ADDR": self.client_address[0],
                "HTTP_CONTENT_ENCODING": self.headers.get("Content-Encoding", ""),
                "GIT_PROTOCOL": self.headers.get("Git-Protocol", ""),
            }
            result = subprocess.run(
                [_BACKEND], input=body, capture_output=True, env=env, timeout=60, check=False
            )
            head, _, payload = result.stdout.partition(b"\r\n\r\n")
            if not _:
                head, _, payload = result.stdout.partition(b"\n\n")
            status, headers = 200, []
            for line in head.decode("latin-1").splitlines():
                name, _, value = line.partition(":")
                if name.lower() == "status":
                    status = int(value.strip().split()[0])
                elif name:
                    headers.append((name, value.strip()))
            record.status = status
            self.send_response(status)
            for name, value in headers:
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            if remote.stall is not None and len(payload) > 100_000 and not remote.stall.is_set():
                half = len(payload) // 2
                self.wfile.write(payload[:half])
                self.wfile.flush()
                remote.stalled.set()
                while not remote.stall.wait(0.05) and not remote._stopping.is_set():
                    pass
                payload = payload[half:]
            try:
                self.wfile.write(payload)
            except OSError:  # the client went away while the answer was held
                self.close_connection = True

        def _read_chunked(self) -> bytes:
            chunks = []
            while True:
                size = int(self.rfile.readline().strip().split(b";")[0], 16)
                if size == 0:
                    self.rfile.readline()
                    return b"".join(chunks)
                chunks.append(self.rfile.read(size))
                self.rfile.readline()

    return Handler


def bare_clone(source: Path, root: Path, name: str) -> Path:
    """A bare copy of ``source`` served as ``<name>.git`` under ``root``."""
    target = root / f"{name}.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(source), str(target)], check=True)
    return target


def have_http_backend() -> bool:
    return _BACKEND is not None and shutil.which("git") is not None
