"""dockyard-git in /health: its --root folders present; one removed after start makes it 503."""

from __future__ import annotations

import shutil

from dockyard_shared.health import Health
from tests.git.helpers import make_server


async def test_a_root_removed_after_start_is_reported_down(tmp_path):
    kept, removed = tmp_path / "kept", tmp_path / "removed"
    kept.mkdir()
    removed.mkdir()
    server = make_server(kept, removed)
    status, body = await Health({"git": server}).report()
    assert status == 200 and body["checks"]["git"]["roots"]["detail"] == "2 root folder(s) present"
    shutil.rmtree(removed)
    status, body = await Health({"git": server}).report()
    assert status == 503
    roots = body["checks"]["git"]["roots"]
    assert roots["up"] is False and str(removed) in roots["detail"] and str(kept) not in roots["detail"]
