"""problem_for without a server: each SQLite message → its problem category, retry answer and next step.

The errors are SQLite's own, raised by a plain in-memory connection; the source stands in for the
served database (its alias, folder, mode and catalog look-ups).
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from dockyard_shared import ErrorCategory
from dockyard_sqlite.database import Budget
from dockyard_sqlite.database.errors import MAX_ERROR_ECHO_CHARS, column_hint, column_list, problem_for
from dockyard_sqlite.safety import AuthorizerLog
from dockyard_sqlite.workers.errors import OutOfMemory, StatementStopped, WorkerDied


@dataclass
class Source:
    alias: str = "shop"
    path: Path = Path("/srv/data/shop.db")
    writable: bool = False
    memory_per_statement_mb: int = 117
    max_write_mb: int = 64
    tables: list[str] = field(default_factory=lambda: ["customers", "orders"])
    columns: dict[str, list[str]] = field(default_factory=lambda: {"customers": ["id", "email", "name"]})

    def known_tables(self) -> list[str]:
        return self.tables

    def known_columns(self, sql: str | None) -> tuple[list[str], dict[str, list[str]]] | None:
        named = [t for t in self.columns if sql and t in sql]
        return named, self.columns

    def index_advice(self, sql: str | None) -> list[str]:
        return []


def sqlite_error(sql: str, *, setup: str = "", params=(), prepare=None) -> sqlite3.Error:
    connection = sqlite3.connect(":memory:")
    connection.executescript(setup)
    if prepare:
        prepare(connection)
    with pytest.raises(sqlite3.Error) as raised:
        connection.execute(sql, params).fetchall()
    connection.close()
    return raised.value


def test_an_unknown_table_is_not_found_with_close_matches():
    problem = problem_for(sqlite_error("SELECT * FROM custmers"), Source())
    assert problem.category is ErrorCategory.NOT_FOUND and not problem.retryable
    assert "no such table: custmers" in problem.what
    assert problem.next_step.startswith("Did you mean 'customers'?") and "list_tables" in problem.next_step


def test_an_unknown_column_of_one_named_table_lists_its_columns():
    sql = "SELECT emial FROM customers"
    error = sqlite_error(sql, setup="CREATE TABLE customers(id, email, name);")
    problem = problem_for(error, Source(), sql=sql)
    assert problem.category is ErrorCategory.INVALID_ARGUMENT
    assert problem.next_step == "Did you mean 'email' (in customers)? Columns of customers: id, email, name."


def test_a_syntax_error_asks_for_fixed_sql():
    problem = problem_for(sqlite_error("SELEC 1"), Source())
    assert problem.category is ErrorCategory.INVALID_ARGUMENT
    assert problem.what.startswith("SQLite refused the statement:") and "syntax error" in problem.what
    assert problem.next_step == "Fix the SQL and try again."


def test_two_statements_are_one_too_many():
    with pytest.raises(sqlite3.ProgrammingError) as raised:
        sqlite3.connect(":memory:").execute("SELECT 1; SELECT 2")
    problem = problem_for(raised.value, Source())
    assert problem.category is ErrorCategory.INVALID_ARGUMENT
    assert problem.next_step == "Send the statements one per call."


def test_mismatched_params_say_how_to_pass_them():
    problem = problem_for(sqlite_error("SELECT ?, ?", params=(1,)), Source())
    assert problem.category is ErrorCategory.INVALID_ARGUMENT
    assert "parameters do not match" in problem.what
    assert "a list with one value for each ?" in problem.next_step


def test_a_constraint_violation_is_a_conflict():
    error = sqlite_error(
        "INSERT INTO t VALUES (1)", setup="CREATE TABLE t(id PRIMARY KEY); INSERT INTO t VALUES (1);"
    )
    problem = problem_for(error, Source(writable=True))
    assert problem.category is ErrorCategory.CONFLICT and not problem.retryable
    assert "violates a constraint" in problem.what and "UNIQUE" in problem.what


def test_a_locked_database_is_a_conflict_worth_retrying():
    problem = problem_for(sqlite3.OperationalError("database is locked"), Source())
    assert problem.category is ErrorCategory.CONFLICT and problem.retryable
    assert problem.next_step == "Retry in a few seconds."


def test_a_corrupt_file_names_the_database_and_the_repair(tmp_path):
    path = tmp_path / "broken.db"
    path.write_bytes(b"not a database at all" * 100)
    with pytest.raises(sqlite3.DatabaseError) as raised:
        sqlite3.connect(path).execute("SELECT * FROM sqlite_master")
    problem = problem_for(raised.value, Source(path=path))
    assert problem.category is ErrorCategory.CONFLICT
    assert (
        "database 'shop' is not a valid SQLite database" in problem.what and ".recover" in problem.next_step
    )


def test_a_file_that_cannot_be_opened_is_not_found():
    problem = problem_for(sqlite3.OperationalError("unable to open database file"), Source())
    assert problem.category is ErrorCategory.NOT_FOUND and "cannot be opened" in problem.what


def test_a_write_to_a_read_only_file_points_at_allow_write(tmp_path):
    path = tmp_path / "ro.db"
    sqlite3.connect(path).execute("CREATE TABLE t(x)").connection.commit()
    connection = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    with pytest.raises(sqlite3.OperationalError) as raised:
        connection.execute("INSERT INTO t VALUES (1)")
    problem = problem_for(raised.value, Source(path=path))
    assert problem.category is ErrorCategory.PERMISSION_DENIED and "--allow-write" in problem.next_step


def test_an_action_the_authorizer_refused_is_named_and_the_mode_decides_the_next_step():
    log = AuthorizerLog(refused="PRAGMA journal_mode=delete")
    error = sqlite_error(
        "PRAGMA journal_mode = delete",
        prepare=lambda c: c.set_authorizer(lambda *_: sqlite3.SQLITE_DENY),
    )
    read_only = problem_for(error, Source(), log=log)
    assert read_only.category is ErrorCategory.PERMISSION_DENIED
    assert read_only.what == "PRAGMA journal_mode=delete is not allowed on this read-only connection."
    assert read_only.next_step.startswith("Use query for SELECT")
    writable = problem_for(error, Source(writable=True), log=log)
    assert (
        writable.what.endswith("not allowed on this server.") and "ATTACH, VACUUM INTO" in writable.next_step
    )


def test_attaching_another_file_is_refused_even_without_a_log_entry():
    error = sqlite_error(
        "ATTACH ':memory:' AS other", prepare=lambda c: c.setlimit(sqlite3.SQLITE_LIMIT_ATTACHED, 0)
    )
    problem = problem_for(error, Source(), log=AuthorizerLog())
    assert problem.category is ErrorCategory.PERMISSION_DENIED and problem.what.startswith(
        "ATTACH or VACUUM INTO"
    )


def test_a_statement_past_its_time_limit_and_one_cancelled_are_told_apart():
    error = sqlite_error(
        "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT max(x) FROM c",
        prepare=lambda c: c.set_progress_handler(lambda: 1, 1000),
    )
    expired = problem_for(error, Source(), budget=Budget(250))
    assert expired.category is ErrorCategory.LIMIT_EXCEEDED and "250 ms limit" in expired.what
    assert "explain_query" in expired.next_step
    cancelled_budget = Budget(250)
    cancelled_budget.cancelled.set()
    cancelled = problem_for(error, Source(), budget=cancelled_budget)
    assert (
        cancelled.what == "The statement was cancelled by the client."
        and cancelled.next_step == "None needed."
    )


def test_a_value_over_the_length_limit_says_how_to_read_part_of_it():
    error = sqlite_error(
        "SELECT zeroblob(2000)", prepare=lambda c: c.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, 1000)
    )
    problem = problem_for(error, Source())
    assert problem.category is ErrorCategory.LIMIT_EXCEEDED and "16 MiB limit" in problem.what
    assert "substr(column, start, count)" in problem.next_step


def test_a_long_like_pattern_is_a_limit():
    error = sqlite_error(
        "SELECT 'a' LIKE ?",
        params=("a" * 200,),
        prepare=lambda c: c.setlimit(sqlite3.SQLITE_LIMIT_LIKE_PATTERN_LENGTH, 128),
    )
    problem = problem_for(error, Source())
    assert problem.category is ErrorCategory.LIMIT_EXCEEDED and "longer than 128 bytes" in problem.what
    assert "instr(column, 'text')" in problem.next_step


def test_a_statement_out_of_memory_names_the_bound_and_how_to_need_less():
    for error in (OutOfMemory("out of memory"), WorkerDied(), sqlite_error_out_of_memory()):
        problem = problem_for(error, Source())
        assert problem.category is ErrorCategory.LIMIT_EXCEEDED and not problem.retryable
        assert "about 117 MiB" in problem.what and "nested CTEs" in problem.next_step


def sqlite_error_out_of_memory() -> BaseException:
    return MemoryError()  # what sqlite3 raises for SQLITE_NOMEM, should one reach problem_for


def test_a_worker_killed_at_the_time_limit_says_the_step_could_not_be_interrupted():
    problem = problem_for(StatementStopped(), Source(), budget=Budget(300))
    assert problem.category is ErrorCategory.LIMIT_EXCEEDED
    assert "300 ms limit" in problem.what and "inside one step" in problem.what
    cancelled = Budget(300)
    cancelled.cancel()
    assert problem_for(StatementStopped(), Source(), budget=cancelled).what == (
        "The statement was cancelled by the client."
    )


def test_a_write_past_the_growth_limit_is_a_limit_in_write_mode():
    problem = problem_for(sqlite3.OperationalError("database or disk is full"), Source(writable=True))
    assert problem.category is ErrorCategory.LIMIT_EXCEEDED and "64 MiB" in problem.what
    assert "--max-write-mb" in problem.what and "smaller ranges" in problem.next_step


def test_a_view_calling_a_function_the_schema_may_not_use_is_refused_with_a_way_around():
    error = sqlite_error(
        "SELECT * FROM v",
        setup="CREATE VIEW v AS SELECT load_extension('x') AS y;",
        prepare=lambda c: c.execute("PRAGMA trusted_schema = OFF"),
    )
    problem = problem_for(error, Source())
    assert problem.category is ErrorCategory.PERMISSION_DENIED
    assert "unsafe use of load_extension()" in problem.what and "tables underneath" in problem.next_step


def test_regexp_in_the_statement_or_in_the_schema_is_refused_with_an_alternative():
    in_statement = problem_for(
        sqlite3.DatabaseError("not authorized"), Source(), log=AuthorizerLog(refused="the function regexp()")
    )
    assert in_statement.category is ErrorCategory.PERMISSION_DENIED
    assert in_statement.what.startswith("REGEXP is not available") and "LIKE" in in_statement.next_step
    no_such = problem_for(sqlite_error("SELECT 'a' REGEXP 'b'"), Source())
    assert no_such.what.startswith("REGEXP is not available") and "generated column" not in no_such.what
    for message in ("unsafe use of regexp()", "unknown function: REGEXP()"):
        in_schema = problem_for(sqlite3.OperationalError(message), Source(), log=AuthorizerLog())
        assert "A generated column or index of this table uses it." in in_schema.what
        assert in_schema.next_step.endswith("Select the table's other columns by name.")


def test_host_paths_are_scrubbed_and_long_messages_cut():
    problem = problem_for(sqlite3.OperationalError("cannot open /home/alice/secret/x.db"), Source())
    assert "/home/alice" not in problem.what and "<path>" in problem.what
    kept = problem_for(sqlite3.OperationalError("near /srv/data/other.db: syntax error"), Source())
    assert "/srv/data/other.db" in kept.what  # the database's own folder may be shown
    huge = problem_for(sqlite3.OperationalError("near " + "x" * 5000 + ": syntax error"), Source())
    assert len(huge.what) < MAX_ERROR_ECHO_CHARS + 100 and "more characters]" in huge.what


def test_a_column_hint_without_a_catalog_or_a_named_table_falls_back_to_describe_table():
    assert column_hint("x", None) == "Call describe_table to see the columns of a table."
    nearby = ([], {"a": ["name"], "b": ["names"]})
    assert column_hint("nme", nearby) == (
        "Did you mean 'name' (in a) or 'names' (in b)? Call describe_table to see every column of a table."
    )


def test_a_column_list_stays_short_and_says_where_the_rest_is():
    text = column_list("wide", [f"column_{i:04d}" for i in range(500)])
    assert text.startswith("Columns of wide: column_0000, column_0001")
    assert "more; describe_table wide lists them all)." in text and len(text) < 1_200
