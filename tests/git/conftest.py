from __future__ import annotations

from pathlib import Path

import pytest

from tests.git.helpers import make_repo


@pytest.fixture
def repo(tmp_path) -> Path:
    return make_repo(tmp_path / "project")
