"""What the READMEs tell a new user holds: task ids as the server writes them, the Node.js the Inspector needs,
the test suite's fast lane."""

from __future__ import annotations

import re

from tests.harness import REPO_ROOT, open_session
from tests.tasks.helpers import make_server

READMES = [REPO_ROOT / "README.md", *sorted((REPO_ROOT / "servers").glob("*/README.md"))]


async def test_every_task_id_a_readme_shows_is_written_as_the_server_writes_ids(tmp_path):
    async with open_session(make_server(f"sqlite:///{tmp_path / 'tasks.db'}")) as session:
        await session.call_ok("create_project", {"key": "WEB", "name": "Web"})
        created = (await session.call_ok("create_task", {"project": "WEB", "title": "First"})).data
    assert created["id"] == "WEB-1"  # no leading zeros
    shown = {
        (readme.name, match.group(0))
        for readme in READMES
        for match in re.finditer(r"`[A-Z]{2,10}-0\d*`", readme.read_text())
    }
    assert not shown, f"ids written with leading zeros, unlike the server's: {sorted(shown)}"


def test_the_inspector_section_says_which_node_it_needs():
    readme = (REPO_ROOT / "README.md").read_text()
    section = readme.split("## Debugging with the MCP Inspector", 1)[1].split("\n## ", 1)[0]
    assert "Node.js 22 or newer" in section and "node@22" in section


def test_the_readme_gives_the_suites_duration_and_its_fast_lane():
    readme = (REPO_ROOT / "README.md").read_text()
    assert 'uv run pytest -m "not slow"' in readme and "minutes" in readme
