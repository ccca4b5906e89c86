"""printf/format, instr and replace are Python functions on served connections (see safety.py):
for ordinary arguments they must answer exactly what SQLite's own functions answer."""

from __future__ import annotations

import sqlite3

import pytest

from dockyard_sqlite.database import Budget, Database
from dockyard_sqlite.safety import printf_repeats
from dockyard_sqlite.settings import Limits, parse_database_spec

CASES = [
    # instr: characters for text, bytes for two blobs, NULLs, numbers as text, empty needles
    "instr('abc', 'b')",
    "instr('abc', 'z')",
    "instr('abc', '')",
    "instr('', '')",
    "instr('', 'a')",
    "instr(NULL, 'a')",
    "instr('a', NULL)",
    "instr('aaa', 'aa')",
    "instr('héllo wörld', 'wö')",
    "instr('日本語テキスト', '語テ')",
    "instr(x'00ff01', x'ff01')",
    "instr(x'c3a9c3a961', x'61')",
    "instr(x'c3a9c3a961', 'a')",
    "instr('ééa', x'61')",
    "instr(x'', 'a')",
    "instr('a', x'')",
    "instr(12345, 34)",
    "instr(1.5, '.')",
    "instr(1e20, 'e+')",
    "instr('a' || char(0) || 'b', 'b')",
    # replace: NULLs, an empty pattern (X itself, type and all), numbers, blobs, unicode
    "replace('abc', 'b', 'x')",
    "replace('abc', '', 'x')",
    "replace(NULL, 'a', 'x')",
    "replace('abc', NULL, 'x')",
    "replace('abc', 'b', NULL)",
    "replace('abc', '', NULL)",
    "replace(123, '2', '9')",
    "replace(123, '', '9')",
    "replace(1.5, '', '9')",
    "replace(x'6162', '', 'x')",
    "replace('aaa', 'aa', 'b')",
    "replace('héllo', 'é', 'e')",
    "replace(x'616263', 'b', 'x')",
    "replace('abc', x'62', x'7a')",
    "replace(1e20, 'e', 'E')",
    "replace(2.5, 5, 75)",
    "hex(replace(x'ff61', 'a', 'b'))",  # not UTF-8: a blob here, text in SQLite; the same bytes
    "replace('abc', char(0), 'x')",
    "replace('a' || char(0) || 'b', 'b', 'c')",
    # printf and format: delegated to SQLite's own unless a %c repeat cannot fit
    "printf('%d-%s', 5, 'x')",
    "printf('%5.2f|%-6s|%06d', 3.14159, 'ab', 42)",
    "printf('%.3c', 'x')",
    "printf('%*d|%-*d|', 5, 42, 4, 7)",
    "printf('%.*c', -3, 'y')",
    "printf('%.*c', '3', 'z')",
    "printf('%q %Q %Q %w', 'it''s', NULL, 'a', 'a\"b')",
    "printf('%lld %,d %!.3g %x %X %o', 1099511627776, 1234567, 1.0, 255, 255, 8)",
    "printf('100%% %n%d', 3)",
    "printf('abc%')",
    "printf('%5')",
    "printf('%d')",
    "printf('%z|%T|%d', 'a', 1, 2)",
    "printf('%c', 'é')",
    "printf('%.3c|%s', x'41', x'4142')",
    "printf(NULL)",
    "printf()",
    "printf(42)",
    "printf('%.2c%.2lc%l.2c', 'a', 'b', 'c')",
    "printf('%s', 1e20)",
    "format('%d %s', 1, 'two')",
    "format('%.5c', 'é')",
]


@pytest.fixture
def served(tmp_path):
    path = tmp_path / "plain.db"
    sqlite3.connect(path).close()
    return Database(parse_database_spec(str(path)), writable=False, create=False, limits=Limits())


@pytest.mark.parametrize("call", CASES)
def test_a_replaced_function_answers_as_sqlite_does(served, call):
    sql = f"SELECT typeof({call}), hex({call}), quote({call})"
    expected = sqlite3.connect(":memory:").execute(sql).fetchone()
    with served._connection(budget=Budget(1000)) as connection:
        assert connection.execute(sql).fetchone() == expected


@pytest.mark.parametrize(
    ("fmt", "args", "repeats"),
    [
        ("%.3c", ["x"], 2),
        ("%.*c", [5, "x"], 4),
        ("%.*c", [-5, "x"], 4),
        ("%*.*c", [9, 5, "x"], 4),
        ("%d %.*c", [1, 3, "x"], 2),
        ("%.*c", ["4294967297", "x"], 0),  # SQLite reads the int64 as a C int: 1
        ("%.2147483647c", ["x"], 2147483646),
        ("%.4294967299c", ["x"], 2),  # literal digits wrap at 32 bits
        ("%.3lc", ["x"], 2),
        ("%l.3c", ["x"], 0),  # '.' is no conversion: SQLite stops
        ("%T%.3c", ["x"], 0),
        ("%5.3c%%%.4c", ["x", "y"], 5),
        ("%.3c\x00%.9c", ["x", "y"], 2),
    ],
)
def test_printf_repeats_follows_sqlites_parser(fmt, args, repeats):
    assert printf_repeats(fmt, args) == repeats
