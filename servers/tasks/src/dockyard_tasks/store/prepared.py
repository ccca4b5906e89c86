"""Core selects compiled once and run on the driver's own connection, for the reads that cannot wait.

Why: get_task on SQLite is answered on the event loop (``TaskStore.get_task_at_once``), where every
microsecond is one no other request gets. Its statements take ~10 µs each in SQLite; SQLAlchemy's
execution path around each (execution context, events, result proxy) took more than the statements, ~230
Python calls per get_task, and the more so when the process is called after idling with its caches cold.

The SQL is still SQLAlchemy's: each statement is compiled for the engine's dialect once, and its rows go
through the same result processors SQLAlchemy would apply (a SQLite DATETIME string → ``datetime``), so a
row read here equals the row ``Connection.execute`` returns, by position and by name.
"""

from __future__ import annotations

from collections import namedtuple
from collections.abc import Callable, Sequence
from typing import Any

from sqlalchemy import Dialect, Select

__all__ = ["PreparedSelect", "PreparedSelects"]


class PreparedSelect:
    """One select, compiled for a dialect with positional parameters."""

    def __init__(self, statement: Select, dialect: Dialect) -> None:
        compiled = statement.compile(dialect=dialect)
        if compiled.positiontup is None:
            raise ValueError(f"{dialect.name} does not take positional parameters")
        self.sql = compiled.string
        self._order = list(compiled.positiontup)
        # Parameters the statement fills itself, such as the zero OFFSET SQLite's LIMIT comes with.
        self._defaults = {
            name: bind.effective_value for name, bind in compiled.binds.items() if not bind.required
        }
        self._bind: dict[str, Callable[[Any], Any]] = {}
        for name, parameter in compiled.binds.items():
            process = parameter.type.dialect_impl(dialect).bind_processor(dialect)
            if process is not None:
                self._bind[name] = process
        columns = list(statement.selected_columns)
        processors = [column.type.dialect_impl(dialect).result_processor(dialect, None) for column in columns]
        self._processed = [
            (index, process) for index, process in enumerate(processors) if process is not None
        ]
        self._row = namedtuple("Row", [column.key for column in columns], rename=True)  # type: ignore[misc]

    def parameters(self, values: dict[str, Any]) -> list[Any]:
        """The positional parameters for ``values`` (the statement's own defaults, such as a zero
        OFFSET, filled in)."""
        merged = {**self._defaults, **values}
        for name, process in self._bind.items():
            merged[name] = process(merged[name])
        return [merged[name] for name in self._order]

    def rows(self, cursor: Any, values: dict[str, Any]) -> list[Any]:
        """Run on a DB-API ``cursor``; rows as named tuples, converted as SQLAlchemy would convert them."""
        fetched = cursor.execute(self.sql, self.parameters(values)).fetchall()
        make = self._row._make
        if not self._processed:
            return [make(row) for row in fetched]
        rows = []
        for row in fetched:
            values_ = list(row)
            for index, process in self._processed:
                values_[index] = process(values_[index])
            rows.append(make(values_))
        return rows


class PreparedSelects:
    """A set of selects prepared for one dialect; ``fetch(statement, values)`` runs one on a cursor."""

    def __init__(self, statements: Sequence[Select], dialect: Dialect) -> None:
        self._prepared = {id(statement): PreparedSelect(statement, dialect) for statement in statements}
        self._statements = list(statements)  # keeps each id() valid

    def fetcher(self, cursor: Any) -> Callable[[Select, dict[str, Any]], list[Any]]:
        prepared = self._prepared
        return lambda statement, values: prepared[id(statement)].rows(cursor, values)
