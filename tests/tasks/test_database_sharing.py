"""One server process per SQLite file: a second process is refused at start (its subscribers would never
hear the first one's changes), unless given --allow-shared-file, which it then warns about."""

from __future__ import annotations

import pytest

from dockyard_tasks.store import TaskStore
from tests.harness import ERAS, http_server, open_session
from tests.tasks.helpers import tasks_launch

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("era", ERAS)
async def test_a_second_process_on_one_sqlite_file_is_refused_unless_allowed(sqlite_url, log_dir, era):
    TaskStore(sqlite_url).close()
    with http_server(tasks_launch(sqlite_url, "--demo"), log_dir=log_dir) as first:
        async with open_session(first.url(), era=era) as session:
            await session.call_ok("list_tasks", {})  # serving, the file open
        refused = tasks_launch(sqlite_url).run()
        assert refused.returncode == 2, refused.stderr
        assert "already served by another dockyard-tasks process" in refused.stderr
        assert "--allow-shared-file" in refused.stderr and "PostgreSQL" in refused.stderr
        assert "Traceback" not in refused.stderr and refused.stdout == ""

        shared = tasks_launch(sqlite_url, "--allow-shared-file")
        with http_server(shared, log_dir=log_dir) as second:
            async with open_session(second.url(), era=era) as session:
                listed = (await session.call_ok("list_tasks", {"project": "TASK"})).data
                assert listed["tasks"]
            assert "--allow-shared-file" in second.log() and "will not hear" in second.log()
    # The first process gone, the file is served again without the flag.
    async with open_session(tasks_launch(sqlite_url), era=era) as session:
        await session.call_ok("list_projects", {})


def test_one_process_may_build_several_servers_on_one_file(sqlite_url):
    from tests.tasks.helpers import make_server

    make_server(sqlite_url)
    make_server(sqlite_url, demo=True)  # the process's own claim: tests and `dockyard serve all` do this
