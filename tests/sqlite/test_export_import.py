"""export_csv and import_csv: files only in the operator's folders, never overwritten, bounded, with
formula cells neutralised on export and malformed files refused on import (nothing left behind)."""

from __future__ import annotations

import csv
import os
import sqlite3

import pytest

from tests.harness import open_session
from tests.sqlite.cli import from_command_line
from tests.sqlite.helpers import file_digest, rows


@pytest.fixture
def export_dir(tmp_path):
    folder = tmp_path / "exports"
    folder.mkdir()
    return folder


@pytest.fixture
def import_dir(tmp_path):
    folder = tmp_path / "imports"
    folder.mkdir()
    return folder


def exporting(db, folder, *flags):
    return from_command_line("--db", db, "--export-dir", folder, *flags)


def importing(db, folder, *flags):
    return from_command_line("--db", db, "--allow-write", "--import-dir", folder, *flags)


def read_csv(path, delimiter=","):
    with open(path, newline="", encoding="utf-8") as file:
        return list(csv.reader(file, delimiter=delimiter))


# -- export -------------------------------------------------------------------------------------


async def test_a_query_is_exported_with_its_header_and_row_count(people, export_dir, era):
    async with open_session(exporting(people, export_dir), era=era) as session:
        result = (
            await session.call_ok(
                "export_csv",
                {
                    "file": "owners.csv",
                    "sql": "SELECT id, name, photo FROM people WHERE id <= ?",
                    "params": [3],
                },
            )
        ).data
    assert result["rows"] == 3 and result["path"] == str(export_dir / "owners.csv")
    assert result["bytes"] == (export_dir / "owners.csv").stat().st_size
    assert read_csv(export_dir / "owners.csv") == [
        ["id", "name", "photo"],
        ["1", "person 1", bytes(range(40)).hex()],
        ["2", "person 2", ""],
        ["3", "person 3", ""],
    ]
    assert os.listdir(export_dir) == ["owners.csv"]  # no temporary file left


async def test_a_table_is_exported_as_tsv(people, export_dir, era):
    async with open_session(exporting(people, export_dir), era=era) as session:
        result = (await session.call_ok("export_csv", {"file": "pets.tsv", "table": "PETS"})).data
    assert result["rows"] == 300
    exported = read_csv(export_dir / "pets.tsv", "\t")
    assert exported[0] == ["id", "owner_id", "kind"] and len(exported) == 301


async def test_formula_cells_are_neutralised_and_numbers_are_not(tmp_path, export_dir, era):
    path = tmp_path / "cells.db"
    connection = sqlite3.connect(path)
    connection.execute("CREATE TABLE cells (v)")
    values = ['=HYPERLINK("http://x")', "+1+1", "-2+3", "@SUM(A1)", "\tx", "-5", "+3.5", -7, "plain", None]
    connection.executemany("INSERT INTO cells VALUES (?)", [(v,) for v in values])
    connection.commit()
    connection.close()
    async with open_session(exporting(path, export_dir), era=era) as session:
        result = (await session.call_ok("export_csv", {"file": "cells.csv", "table": "cells"})).data
    assert result["neutralised_cells"] == 5
    assert [row[0] for row in read_csv(export_dir / "cells.csv")[1:]] == [
        '\'=HYPERLINK("http://x")',
        "'+1+1",
        "'-2+3",
        "'@SUM(A1)",
        "'\tx",
        "-5",
        "+3.5",
        "-7",
        "plain",
        "",
    ]


async def test_an_existing_file_is_never_overwritten_a_fresh_name_is_taken(people, export_dir, era):
    (export_dir / "pets.csv").write_text("precious\n")
    outside = export_dir.parent / "outside.csv"
    outside.write_text("outside\n")
    (export_dir / "link.csv").symlink_to(outside)
    async with open_session(exporting(people, export_dir), era=era) as session:
        first = (await session.call_ok("export_csv", {"file": "pets.csv", "table": "pets"})).data
        second = (await session.call_ok("export_csv", {"file": "pets.csv", "table": "pets"})).data
        linked = (await session.call_ok("export_csv", {"file": "link.csv", "table": "pets"})).data
    assert (export_dir / "pets.csv").read_text() == "precious\n"
    assert first["path"].endswith("pets-2.csv") and second["path"].endswith("pets-3.csv")
    assert "never overwritten" in first["note"]
    assert outside.read_text() == "outside\n" and linked["path"].endswith("link-2.csv")


@pytest.mark.parametrize(
    "name",
    [
        "../escape.csv",
        "/tmp/abs.csv",
        "sub/dir.csv",
        ".hidden.csv",
        "orders.txt",
        "orders",
        "a\x00.csv",
        "..csv",
        "x.csv ",
    ],
)
async def test_a_name_that_is_not_a_plain_csv_name_is_refused(people, export_dir, name, era):
    async with open_session(exporting(people, export_dir), era=era) as session:
        text = await session.call_error("export_csv", {"file": name, "table": "pets"})
    assert "not a plain file name" in text and os.listdir(export_dir) == []
    assert not (export_dir.parent / "escape.csv").exists()


async def test_an_export_past_the_size_limit_leaves_no_file(tmp_path, export_dir, era):
    path = tmp_path / "big.db"
    connection = sqlite3.connect(path)
    connection.execute("CREATE TABLE big (v TEXT)")
    connection.executemany("INSERT INTO big VALUES (?)", [("x" * 1000,)] * 3000)  # ~3 MB
    connection.commit()
    connection.close()
    async with open_session(exporting(path, export_dir, "--max-export-mb", "1"), era=era) as session:
        text = await session.call_error("export_csv", {"file": "big.csv", "table": "big"})
        small = (
            await session.call_ok("export_csv", {"file": "small.csv", "sql": "SELECT * FROM big LIMIT 10"})
        ).data
    assert "1 MiB limit (--max-export-mb)" in text and "partial file was removed" in text
    assert os.listdir(export_dir) == ["small.csv"] and small["rows"] == 10


async def test_export_runs_only_read_only_sql(people, export_dir, era):
    before = file_digest(people)
    async with open_session(exporting(people, export_dir), era=era) as session:
        delete = await session.call_error(
            "export_csv", {"file": "x.csv", "sql": "DELETE FROM pets RETURNING *"}
        )
        attach = await session.call_error(
            "export_csv", {"file": "y.csv", "sql": f"ATTACH DATABASE '{export_dir}/z.db' AS z"}
        )
        both = await session.call_error("export_csv", {"file": "z.csv", "sql": "SELECT 1", "table": "pets"})
    assert "not allowed" in delete and "not allowed" in attach and "either sql or table" in both
    assert file_digest(people) == before and os.listdir(export_dir) == []


async def test_without_an_export_folder_the_tool_says_how_to_enable_it(people, era):
    async with open_session(from_command_line("--db", people, "--toolsets", "export"), era=era) as session:
        text = await session.call_error("export_csv", {"file": "pets.csv", "table": "pets"})
    assert "--export-dir" in text


# -- import -------------------------------------------------------------------------------------


async def test_a_csv_becomes_a_new_table_with_inferred_types(people, import_dir, era):
    (import_dir / "sales.csv").write_text(
        '\ufeffid,amount,zip,when,note\r\n1,2.5,02134,2024-01-01,"a, quoted""cell"\r\n2,,10001,2024-01-02,=1+1\r\n',
        encoding="utf-8",
    )
    async with open_session(importing(people, import_dir), era=era) as session:
        result = (await session.call_ok("import_csv", {"file": "sales.csv", "table": "sales"})).data
    assert result["rows"] == 2 and result["types"] == "inferred"
    assert result["columns"] == ["id INTEGER", "amount REAL", "zip TEXT", "when TEXT", "note TEXT"]
    assert rows(people, "SELECT * FROM sales ORDER BY id") == [
        (1, 2.5, "02134", "2024-01-01", 'a, quoted"cell'),
        (2, None, "10001", "2024-01-02", "=1+1"),
    ]


async def test_types_text_keeps_every_cell_as_written(people, import_dir, era):
    (import_dir / "t.tsv").write_text("a\tb\n1\t\n", encoding="utf-8")
    async with open_session(importing(people, import_dir), era=era) as session:
        result = (await session.call_ok("import_csv", {"file": "t.tsv", "table": "t", "types": "text"})).data
    assert result["columns"] == ["a TEXT", "b TEXT"] and result["types"] == "text"
    assert rows(people, "SELECT a, b FROM t") == [("1", "")]


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ('a,b\n1,"unclosed\n', "not well-formed CSV"),
        ("a,b\n1,2,3\n", "line 2: 3 cells where the header has 2"),
        (b"a,b\n\xff\xfe,1\n", "not UTF-8"),
        ("", "empty"),
    ],
)
async def test_a_malformed_file_is_refused_and_leaves_no_table(people, import_dir, content, expected, era):
    target = import_dir / "bad.csv"
    target.write_bytes(content if isinstance(content, bytes) else content.encode())
    before = file_digest(people)
    async with open_session(importing(people, import_dir), era=era) as session:
        text = await session.call_error("import_csv", {"file": "bad.csv", "table": "bad"})
    assert expected in text
    assert file_digest(people) == before


async def test_import_refuses_an_existing_table_a_bad_name_a_link_and_a_path(
    people, import_dir, tmp_path, era
):
    (import_dir / "ok.csv").write_text("a\n1\n")
    secret = tmp_path / "secret.csv"
    secret.write_text("a\n1\n")
    (import_dir / "link.csv").symlink_to(secret)
    before = file_digest(people)
    async with open_session(importing(people, import_dir), era=era) as session:
        existing = await session.call_error("import_csv", {"file": "ok.csv", "table": "Pets"})
        bad_table = await session.call_error(
            "import_csv", {"file": "ok.csv", "table": 'x"; DROP TABLE pets; --'}
        )
        link = await session.call_error("import_csv", {"file": "link.csv", "table": "x"})
        traversal = await session.call_error("import_csv", {"file": "../secret.csv", "table": "x"})
        missing = await session.call_error("import_csv", {"file": "none.csv", "table": "x"})
    assert "already exists" in existing and "not a plain table name" in bad_table
    assert "symbolic link" in link and "not a plain file name" in traversal and "import folder" in missing
    assert file_digest(people) == before


async def test_import_is_bounded_by_the_write_limit(people, import_dir, era):
    (import_dir / "big.csv").write_text("a\n" + ("y" * 1000 + "\n") * 1200)  # ~1.2 MB
    async with open_session(importing(people, import_dir, "--max-write-mb", "1"), era=era) as session:
        text = await session.call_error("import_csv", {"file": "big.csv", "table": "big"})
    assert "--max-write-mb" in text
    assert rows(people, "SELECT count(*) FROM sqlite_master WHERE name = 'big'") == [(0,)]


async def test_import_needs_write_mode_and_a_folder(people, import_dir, era):
    async with open_session(from_command_line("--db", people, "--toolsets", "import"), era=era) as session:
        text = await session.call_error("import_csv", {"file": "a.csv", "table": "a"})
    assert "--import-dir" in text
    async with open_session(from_command_line("--db", people), era=era) as session:
        assert "import_csv" not in await session.tool_names()


def test_import_dir_without_allow_write_stops_start_up(people, import_dir):
    from dockyard_shared import InvalidArgument

    with pytest.raises(InvalidArgument, match="--import-dir needs --allow-write"):
        from_command_line("--db", people, "--import-dir", import_dir)


async def test_an_export_stopped_by_the_time_limit_leaves_no_file(people, export_dir, era):
    endless = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT x FROM c"
    server = exporting(people, export_dir, "--timeout-ms", "300", "--max-export-mb", "4096")
    async with open_session(server, era=era) as session:
        text = await session.call_error("export_csv", {"file": "endless.csv", "sql": endless})
    assert "300 ms limit" in text and os.listdir(export_dir) == []


async def test_a_small_file_that_would_grow_the_database_past_the_limit_leaves_nothing(
    people, import_dir, era
):
    # 2 bytes a line in the file, several times that as rows of a table: under 1 MiB read, over it stored.
    (import_dir / "ones.csv").write_text("n\n" + "1\n" * 450_000)
    before = file_digest(people)
    server = importing(people, import_dir, "--max-write-mb", "1", "--timeout-ms", "60000")
    async with open_session(server, era=era) as session:
        text = await session.call_error("import_csv", {"file": "ones.csv", "table": "ones"})
    assert "grow the database by more than 1 MiB" in text and "nothing was imported" in text
    assert file_digest(people) == before
