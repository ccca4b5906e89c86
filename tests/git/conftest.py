from __future__ import annotations

from pathlib import Path

import pytest

from tests.git.helpers import make_repo
from tests.git.remote_setup import Remotes, make_remotes


@pytest.fixture
def repo(tmp_path) -> Path:
    return make_repo(tmp_path / "project")


@pytest.fixture
def remotes(tmp_path) -> Remotes:
    """A served clone with a bare remote inside the roots (see remote_setup.py)."""
    return make_remotes(tmp_path)
