"""What a person starting a server for the first time reads when a flag or the port is wrong: the close
match of a mistyped flag (every server's command and `dockyard`), and a port in use named with the flag
to pick another, before anything claims to be serving."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest

from dockyard_shared.cli import discover_servers
from tests.harness import REPO_ROOT, Launch

SERVERS = sorted(discover_servers())


@pytest.fixture
def taken_port() -> Iterator[int]:
    with socket.socket() as holder:  # listening on a free port, as another server would
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        yield holder.getsockname()[1]


@pytest.mark.parametrize("name", SERVERS)
def test_a_mistyped_flag_of_every_server_suggests_the_close_match(name, tmp_path):
    result = Launch(f"dockyard-{name}", env={"XDG_DATA_HOME": str(tmp_path)}).run(
        "--tolsets", "read", "--raed-only"
    )
    assert result.returncode == 2 and "unrecognized arguments" in result.stderr
    assert "--tolsets: did you mean --toolsets?" in result.stderr, result.stderr
    assert "--raed-only: did you mean --read-only?" in result.stderr, result.stderr


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (("confg",), "did you mean 'config'?"),
        (("config", "claude-desktop", "--frm", "uvx"), "--frm: did you mean --form?"),
        (("serve", "sqlite", "--alow-write"), "--alow-write: did you mean --allow-write?"),
        (("serve", "all", "--prot", "0"), "--prot: did you mean --port?"),
    ],
    ids=["command", "config-flag", "serve-flag", "serve-all-flag"],
)
def test_a_mistyped_dockyard_command_or_flag_suggests_the_close_match(args, said, tmp_path):
    result = Launch("dockyard", env={"XDG_DATA_HOME": str(tmp_path)}, cwd=str(REPO_ROOT)).run(*args)
    assert result.returncode == 2 and said in result.stderr, result.stderr


@pytest.mark.parametrize("command", [("dockyard-sqlite", "--demo"), ("dockyard", "serve", "all")])
def test_a_port_in_use_is_named_with_the_flag_to_pick_another_before_serving(command, taken_port, tmp_path):
    script, *args = command
    launch = Launch(script, (*args, "--transport", "http", "--port", str(taken_port)), cwd=str(REPO_ROOT))
    result = Launch(launch.script, launch.args, env={"XDG_DATA_HOME": str(tmp_path)}, cwd=launch.cwd).run()
    assert result.returncode == 2, result.stderr
    assert f"port {taken_port} on 127.0.0.1 is already in use" in result.stderr, result.stderr
    assert "--port N (--port 0 picks a free one)" in result.stderr
    assert "serving" not in result.stderr and "Traceback" not in result.stderr
