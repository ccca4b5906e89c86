"""Fixtures of the sqlite tests (what they import is in helpers.py)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from dockyard_sqlite.demo import ensure_demo_database
from tests.harness import Launch


@pytest.fixture(scope="session")
def demo_template(tmp_path_factory) -> Path:
    return ensure_demo_database(tmp_path_factory.mktemp("demo") / "demo.db")


@pytest.fixture
def shop(tmp_path, demo_template) -> Path:
    """A private copy of the sample database for one test."""
    path = tmp_path / "shop.db"
    path.write_bytes(demo_template.read_bytes())
    return path


@pytest.fixture
def people(tmp_path) -> Path:
    path = tmp_path / "people.db"
    connection = sqlite3.connect(path)
    connection.executescript(
        """
        CREATE TABLE people (id INTEGER PRIMARY KEY, name TEXT NOT NULL, email TEXT, photo BLOB);
        CREATE TABLE pets (id INTEGER PRIMARY KEY, owner_id INTEGER REFERENCES people(id), kind TEXT);
        CREATE INDEX pets_by_owner ON pets(owner_id);
        """
    )
    connection.executemany(
        "INSERT INTO people(name, email, photo) VALUES (?, ?, ?)",
        [(f"person {i}", f"p{i}@example.com", bytes(range(40)) if i == 1 else None) for i in range(1, 251)],
    )
    connection.executemany(
        "INSERT INTO pets(owner_id, kind) VALUES (?, ?)", [(i % 250 + 1, "cat") for i in range(300)]
    )
    connection.commit()
    connection.close()
    return path


@pytest.fixture
def sqlite_launch(tmp_path):
    def launch(*args: str) -> Launch:
        return Launch("dockyard-sqlite", args, env={"XDG_DATA_HOME": str(tmp_path / "xdg")})

    return launch
