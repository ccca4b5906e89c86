"""What dockyard-tasks writes to its log at start-up: Alembic's routine lines (its plugins, its context) only
at --log-level DEBUG; an actual schema upgrade at INFO, once."""

from __future__ import annotations

from tests.harness import Launch


def alembic_lines(stderr: str, level: str) -> list[str]:
    return [line for line in stderr.splitlines() if f" {level} alembic." in line]


def test_alembic_says_only_the_upgrades_at_info_and_the_rest_at_debug(tmp_path):
    launch = Launch("dockyard-tasks", (), env={"XDG_DATA_HOME": str(tmp_path)})
    first = launch.run()  # stdin closed: the server starts, migrates the new store and stops
    assert first.returncode == 0, first.stderr
    upgrades = alembic_lines(first.stderr, "INFO")
    assert upgrades and all("Running upgrade" in line for line in upgrades), first.stderr
    assert not alembic_lines(first.stderr, "DEBUG")
    again = launch.run()
    assert not alembic_lines(again.stderr, "INFO"), again.stderr
    debug = Launch("dockyard-tasks", (), env={"XDG_DATA_HOME": str(tmp_path / "other")}).run(
        "--log-level", "DEBUG"
    )
    assert any("setup plugin" in line for line in alembic_lines(debug.stderr, "DEBUG")), debug.stderr
