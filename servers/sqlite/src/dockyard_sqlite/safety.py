"""What a statement may do, decided by SQLite itself.

Every connection gets an authorizer (:func:`authorizer`): SQLite calls it for each action while it
compiles a statement, so the check sees what the statement *does* — not what its text looks like — and
no spelling, comment or nesting gets past it. Read-only connections are also opened with ``mode=ro``
and have the attached-database limit set to zero, so even an action we let through cannot write the
file or reach another one (``VACUUM INTO`` needs an attachment).

``regexp`` is refused too: SQLAlchemy's pysqlite dialect registers it on every connection as a Python
function, SQLite's progress handler never fires inside one, so a catastrophic regular expression
(``'aaaa…!' REGEXP '^(a+)+$'``) would run past every time limit and could not be cancelled. The
authorizer refuses it in statements; SQLite does not consult the authorizer for the expressions of
generated columns and indexes, so :func:`refuse_slow_functions` also replaces the function itself
with one that refuses, from a pool hook that runs after SQLAlchemy's (on Python 3.11
``create_function("regexp", 2, None)`` does not remove a function). The dialect's other function,
``floor``, is ``math.floor``: constant time, left alone.

For the same reason (one function call outruns the progress handler) :func:`install_functions`
replaces SQLite's printf/format, instr and replace on every connection with Python versions that
answer the same but cannot run for minutes: see the comment above it for the measurements. Because
Python's sqlite3 cannot mark a function innocuous, a view, trigger, generated column or index using
one of them needs ``trusted_schema`` ON; :class:`~.database.GuardedConnection` handles that.

The log (:class:`AuthorizerLog`) also records which tables a statement deletes from, including rows
deleted by triggers and foreign-key cascades, so a trial run can tell whether it empties one.
"""

from __future__ import annotations

import re
import sqlite3
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field

__all__ = [
    "READ_PRAGMAS",
    "REPLACED_FUNCTIONS",
    "SLOW_FUNCTIONS",
    "AuthorizerLog",
    "FunctionRefused",
    "authorizer",
    "install_functions",
    "printf_repeats",
    "refuse_slow_functions",
]

# Pragmas that only read. The ones in _PRAGMAS_WITH_ARGUMENT take a table/index name (or a check
# limit) as their argument; for every other one an argument means "set", which is refused.
READ_PRAGMAS = frozenset(
    {
        "application_id",
        "collation_list",
        "compile_options",
        "data_version",
        "encoding",
        "foreign_key_check",
        "foreign_key_list",
        "foreign_keys",
        "freelist_count",
        "function_list",
        "index_info",
        "index_list",
        "index_xinfo",
        "integrity_check",
        "module_list",
        "page_count",
        "page_size",
        "pragma_list",
        "quick_check",
        "read_uncommitted",  # SQLAlchemy reads it on connect
        "schema_version",
        "table_info",
        "table_list",
        "table_xinfo",
        "user_version",
    }
)
_PRAGMAS_WITH_ARGUMENT = frozenset(
    {
        "foreign_key_check",
        "foreign_key_list",
        "index_info",
        "index_list",
        "index_xinfo",
        "integrity_check",
        "quick_check",
        "table_info",
        "table_list",
        "table_xinfo",
    }
)

# Functions that reach outside the database or change how it is interpreted.
_DENIED_FUNCTIONS = frozenset({"load_extension", "readfile", "writefile", "edit", "fts3_tokenizer"})
# Functions that run as Python code, out of reach of the per-statement time limit (the progress
# handler only runs between SQLite's own VM steps), with what to use instead.
SLOW_FUNCTIONS = {
    "regexp": "Use LIKE ('%text%', case-insensitive for ASCII), GLOB ('*[0-9]*', case-sensitive, with "
    "character classes), instr() or substr() instead.",
}

_READ_ACTIONS = frozenset({sqlite3.SQLITE_SELECT, sqlite3.SQLITE_READ, sqlite3.SQLITE_RECURSIVE})
_WRITE_ACTIONS = frozenset(
    {
        sqlite3.SQLITE_INSERT,
        sqlite3.SQLITE_UPDATE,
        sqlite3.SQLITE_DELETE,
        sqlite3.SQLITE_CREATE_INDEX,
        sqlite3.SQLITE_CREATE_TABLE,
        sqlite3.SQLITE_CREATE_TEMP_INDEX,
        sqlite3.SQLITE_CREATE_TEMP_TABLE,
        sqlite3.SQLITE_CREATE_TEMP_TRIGGER,
        sqlite3.SQLITE_CREATE_TEMP_VIEW,
        sqlite3.SQLITE_CREATE_TRIGGER,
        sqlite3.SQLITE_CREATE_VIEW,
        sqlite3.SQLITE_DROP_INDEX,
        sqlite3.SQLITE_DROP_TABLE,
        sqlite3.SQLITE_DROP_TEMP_INDEX,
        sqlite3.SQLITE_DROP_TEMP_TABLE,
        sqlite3.SQLITE_DROP_TEMP_TRIGGER,
        sqlite3.SQLITE_DROP_TEMP_VIEW,
        sqlite3.SQLITE_DROP_TRIGGER,
        sqlite3.SQLITE_DROP_VIEW,
        sqlite3.SQLITE_ALTER_TABLE,
        sqlite3.SQLITE_REINDEX,
        sqlite3.SQLITE_ANALYZE,
    }
)
DESTRUCTIVE_ACTIONS = frozenset(
    {
        sqlite3.SQLITE_DROP_TABLE,
        sqlite3.SQLITE_DROP_TEMP_TABLE,
        sqlite3.SQLITE_DROP_VIEW,
        sqlite3.SQLITE_DROP_TEMP_VIEW,
        sqlite3.SQLITE_DROP_INDEX,
        sqlite3.SQLITE_DROP_TRIGGER,
        sqlite3.SQLITE_DELETE,
    }
)


@dataclass
class AuthorizerLog:
    """What the last statement tried: the actions seen and the first one refused, in words."""

    actions: list[tuple[int, str | None]] = field(default_factory=list)
    refused: str | None = None
    refused_bookkeeping: bool = False
    # (schema, table) of every DELETE the statement may do, its triggers and cascades included.
    deleted: list[tuple[str, str]] = field(default_factory=list)
    # Set only while the server runs its own BEGIN/ROLLBACK (a trial run of a statement).
    own_transaction: bool = False
    # Set only while the server switches PRAGMA trusted_schema (see GuardedConnection.execute).
    own_trust: bool = False
    # Why a replaced function (install_functions) refused its arguments, for the error message.
    function_refused: str | None = None
    # A slow function (SLOW_FUNCTIONS) a schema expression called (refuse_slow_functions).
    slow_function_called: str | None = None

    def reset(self) -> None:
        self.actions.clear()
        self.refused = None
        self.refused_bookkeeping = False
        self.deleted.clear()
        self.own_transaction = False
        self.own_trust = False
        self.function_refused = None
        self.slow_function_called = None

    @contextmanager
    def transaction_control(self) -> Iterator[None]:
        """Let the server's own BEGIN/ROLLBACK through; nothing else is loosened."""
        self.own_transaction = True
        try:
            yield
        finally:
            self.own_transaction = False

    @contextmanager
    def trust_control(self) -> Iterator[None]:
        """Let the server's own PRAGMA trusted_schema through; nothing else is loosened."""
        self.own_trust = True
        try:
            yield
        finally:
            self.own_trust = False


def _describe(action: int, arg1: str | None, arg2: str | None) -> str:
    if action == sqlite3.SQLITE_PRAGMA:
        return f"PRAGMA {arg1}{'=' + arg2 if arg2 else ''}"
    if action == sqlite3.SQLITE_ATTACH:
        return "ATTACH or VACUUM INTO (reaching another database file)"
    if action == sqlite3.SQLITE_DETACH:
        return "DETACH"
    if action == sqlite3.SQLITE_FUNCTION:
        return f"the function {arg2}()"
    if action in (sqlite3.SQLITE_TRANSACTION, sqlite3.SQLITE_SAVEPOINT):
        return "transaction control (BEGIN/COMMIT/SAVEPOINT)"
    if action in (sqlite3.SQLITE_CREATE_VTABLE, sqlite3.SQLITE_DROP_VTABLE):
        return "creating or dropping a virtual table"
    names = {
        sqlite3.SQLITE_INSERT: "INSERT",
        sqlite3.SQLITE_UPDATE: "UPDATE",
        sqlite3.SQLITE_DELETE: "DELETE",
        sqlite3.SQLITE_ALTER_TABLE: "ALTER TABLE",
        sqlite3.SQLITE_REINDEX: "REINDEX",
        sqlite3.SQLITE_ANALYZE: "ANALYZE",
    }
    if action not in names:
        for name, value in vars(sqlite3).items():
            if value == action and name.startswith(("SQLITE_CREATE_", "SQLITE_DROP_")):
                names[action] = name.removeprefix("SQLITE_").replace("_", " ")
    what = names.get(action, f"action {action}")
    return f"{what}{' on ' + arg1 if arg1 else ''}"


def authorizer(*, writable: bool, log: AuthorizerLog) -> Callable[..., int]:
    """An authorizer for a read-only (``writable=False``) or a write-mode connection."""

    def check(
        action: int, arg1: str | None, arg2: str | None, database: str | None, trigger: str | None
    ) -> int:
        if log.own_transaction and action in (sqlite3.SQLITE_TRANSACTION, sqlite3.SQLITE_SAVEPOINT):
            return sqlite3.SQLITE_OK
        if log.own_trust and action == sqlite3.SQLITE_PRAGMA and (arg1 or "").lower() == "trusted_schema":
            return sqlite3.SQLITE_OK
        log.actions.append((action, arg1 if action != sqlite3.SQLITE_FUNCTION else arg2))
        if action == sqlite3.SQLITE_DELETE and arg1:
            log.deleted.append((database or "main", arg1))
        allowed = _allowed(action, arg1, arg2, writable)
        # SQLite reports the catalog bookkeeping of a DROP or CREATE before the DROP or CREATE
        # itself; the model should read about the statement it wrote.
        bookkeeping = arg1 in ("sqlite_master", "sqlite_schema", "sqlite_temp_master")
        if not allowed and (log.refused is None or (log.refused_bookkeeping and not bookkeeping)):
            log.refused = (
                "changing the schema (CREATE, DROP or ALTER)"
                if bookkeeping
                else _describe(action, arg1, arg2)
            )
            log.refused_bookkeeping = bookkeeping
        return sqlite3.SQLITE_OK if allowed else sqlite3.SQLITE_DENY

    return check


def _allowed(action: int, arg1: str | None, arg2: str | None, writable: bool) -> bool:
    if action in _READ_ACTIONS:
        return True
    if action == sqlite3.SQLITE_FUNCTION:
        name = (arg2 or "").lower()
        return name not in _DENIED_FUNCTIONS and name not in SLOW_FUNCTIONS
    if action == sqlite3.SQLITE_PRAGMA:
        name = (arg1 or "").lower()
        if name not in READ_PRAGMAS:
            return False
        return arg2 is None or name in _PRAGMAS_WITH_ARGUMENT
    if action in (sqlite3.SQLITE_ATTACH, sqlite3.SQLITE_DETACH):
        return False
    if action == sqlite3.SQLITE_UPDATE and arg1 in ("sqlite_master", "sqlite_schema") and not writable:
        # SQLite reports this while it sets up a pragma table-valued function such as
        # pragma_table_info('t'); nothing is written (the file is open mode=ro, and writable_schema
        # is a pragma no connection may set).
        return True
    if action in (sqlite3.SQLITE_TRANSACTION, sqlite3.SQLITE_SAVEPOINT):
        # Each call is its own transaction; one left open would hold locks across calls.
        return False
    if action in (sqlite3.SQLITE_CREATE_VTABLE, sqlite3.SQLITE_DROP_VTABLE):
        # Virtual table modules can be extensions with their own file access; not worth the risk.
        return False
    return writable and action in _WRITE_ACTIONS


# -- SQL functions one call of which could outrun the time limit --------------------------------
#
# SQLite's progress handler runs between VM steps, never inside one function call. Measured on
# SQLite 3.40.1 (16 MiB values, 300 ms limit): printf('%.*c', 2147483647, 'x') loops for ~20 s after
# giving up on the result (and 10,000 '%.100000c' in one format add up to ~8 s); instr() and replace()
# compare the pattern at every position, ~10 s for a 1 MB text and a 0.5 MB pattern (~25 minutes at
# 16 MiB). These four are replaced on every connection by Python versions that give the same
# results: printf/format refuse only a call whose %c repeats could never fit in a value and otherwise
# run SQLite's own printf; instr/replace use Python's linear-time search.


class FunctionRefused(Exception):
    """A replaced function refused its arguments; the message is for the model."""


_PRIVATE = threading.local()


def _private() -> sqlite3.Connection:
    """This thread's own in-memory connection, to run SQLite's built-in functions unchanged."""
    connection = getattr(_PRIVATE, "connection", None)
    if connection is None:
        connection = _PRIVATE.connection = sqlite3.connect(":memory:")
        connection.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, _PRIVATE_LENGTH)
    return connection


# The private connections' length limit: that of the connections served (install_functions).
_PRIVATE_LENGTH = 16 * 1024 * 1024
_FLAGS = frozenset("-+ #!0,")
_DIGITS = frozenset("0123456789")
_NONZERO = frozenset("123456789")
# sqlite3_str_vappendf's conversions and which of them take an argument; %T and %S end the format.
_TAKES_ARGUMENT = frozenset("dsgzqQwcouxXfeEGipr")
_INT64 = re.compile(r"[ \t\n\v\f\r]*([+-]?)0*([0-9]*)")


def _c_int(value: object) -> int:
    """``(int)sqlite3_value_int64(value)``, as printf reads a ``*`` width or precision."""
    if value is None:
        return 0
    if isinstance(value, float):
        if value != value:
            number = 0
        elif value >= 9223372036854775807.0 or value <= -9223372036854775808.0:
            number = 2**63 - 1 if value > 0 else -(2**63)
        else:
            number = int(value)
    elif isinstance(value, int):
        number = value
    else:
        text = value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)
        sign, digits = _INT64.match(text).groups()  # type: ignore[union-attr]
        # Past 19 digits it is clamped anyway (and int() of a long digit string is slow, or refused).
        number = min(int(digits[:20] or "0"), 2**63 - (sign != "-"))
        number = -number if sign == "-" else number
    return (number + 2**31) % 2**32 - 2**31


def printf_repeats(fmt: str, args: Sequence[object]) -> int:
    """How many times SQLite 3.40's printf(fmt, *args) repeats a character for %c precisions.

    Follows sqlite3_str_vappendf: flags, width (digits or ``*``), precision (``.digits`` or ``.*``,
    a negative ``*`` taken as positive), ``l``/``ll``, then the conversion; ``*`` and conversions
    take the next argument (0 once they run out); an unknown conversion, %T or %S ends the format.
    """
    fmt = fmt.split("\x00", 1)[0]
    total, used, i, n = 0, 0, 0, len(fmt)

    def char(at: int) -> str:
        return fmt[at] if at < n else ""

    def next_int() -> int:
        nonlocal used
        if used >= len(args):
            return 0
        used += 1
        return _c_int(args[used - 1])

    while True:
        i = fmt.find("%", i) + 1
        if i == 0 or i >= n:
            return total
        c, precision = fmt[i], -1
        while True:
            if c in _FLAGS:
                i += 1
                c = char(i)
                if c:
                    continue
            elif c == "l":
                i += 1
                c = char(i)
                if c == "l":
                    i += 1
                    c = char(i)
            elif c in _NONZERO:
                while char(i + 1) in _DIGITS:
                    i += 1
                i += 1
                c = char(i)
                if c in (".", "l"):
                    continue
            elif c == "*":
                next_int()  # the width: padding stops at the length limit, it costs nothing
                i += 1
                c = char(i)
                if c in (".", "l"):
                    continue
            elif c == ".":
                i += 1
                c = char(i)
                if c == "*":
                    precision = next_int()
                    if precision < 0:
                        precision = -precision if precision >= -2147483647 else -1
                    i += 1
                    c = char(i)
                else:
                    digits = 0
                    while c and c in _DIGITS:
                        digits = (digits * 10 + int(c)) % 2**32
                        i += 1
                        c = char(i)
                    precision = digits & 0x7FFFFFFF
                if c == "l":
                    continue
            break
        if c == "%" or c == "n":
            i += 1
            continue
        if not c or c not in _TAKES_ARGUMENT:
            return total  # unknown conversion, %T, %S or the end: SQLite stops here
        if c == "c" and precision > 1:
            total += precision - 1
        if used < len(args):
            used += 1
        i += 1


def _printf(log: AuthorizerLog, cap: int) -> Callable[..., object]:
    def printf(*args: object) -> object:
        if not args or args[0] is None:
            return None
        fmt = args[0]
        text = fmt.decode("utf-8", "replace") if isinstance(fmt, bytes) else str(fmt)
        if printf_repeats(text, args[1:]) > cap:
            log.function_refused = (
                "printf()/format() was asked to repeat a character (%c with a precision) more times "
                f"than fit in one value ({cap // (1024 * 1024)} MiB); SQLite would spend seconds to "
                "minutes on it and then return NULL."
            )
            raise FunctionRefused(log.function_refused)
        placeholders = ", ".join("?" * len(args))
        return _private().execute(f"SELECT printf({placeholders})", args).fetchone()[0]

    return printf


def _as_text(value: object) -> str | bytes:
    """A value as sqlite3_value_text() sees it: a blob stays bytes (its bytes are the text)."""
    if isinstance(value, (str, bytes)):
        return value
    if isinstance(value, float):  # SQLite's own spelling ("1.0e+20", not Python's "1e+20")
        return _private().execute("SELECT CAST(? AS TEXT)", (value,)).fetchone()[0]
    return str(value)


_CONTINUATION = bytes(range(0x80, 0xC0))


def instr(haystack: object, needle: object) -> int | None:
    """SQLite's instr(): the 1-based position of needle, in characters (in bytes for two blobs)."""
    if haystack is None or needle is None:
        return None
    h, n = _as_text(haystack), _as_text(needle)
    if not n:
        return 1
    if isinstance(h, str) and isinstance(n, str):
        return h.find(n) + 1
    if isinstance(h, bytes) and isinstance(n, bytes):
        return h.find(n) + 1
    # A blob and a text: both are compared as bytes, and the position counted in UTF-8 characters.
    hb = h if isinstance(h, bytes) else h.encode()
    nb = n if isinstance(n, bytes) else n.encode()
    if nb[0] & 0xC0 == 0x80:  # SQLite tries such a needle only at the very start
        return 1 if hb.startswith(nb) else 0
    at = hb.find(nb)
    if at <= 0:
        return at + 1
    return 2 + len(hb[1:at].translate(None, _CONTINUATION))


def _replace(cap: int) -> Callable[[object, object, object], object]:
    def replace(value: object, pattern: object, replacement: object) -> object:
        if value is None or pattern is None:
            return None
        p = _as_text(pattern)
        if not p or p[0] in ("\x00", 0):
            if not isinstance(value, bytes):
                return value  # SQLite hands back X itself, a number as a number
            try:
                return value.decode()  # a blob comes back as text (SQLite read it as text)
            except UnicodeDecodeError:
                return value
        if replacement is None:
            return None
        x, r = _as_text(value), _as_text(replacement)
        if isinstance(x, str) and isinstance(p, str) and isinstance(r, str):
            count = x.count(p)
            if not count:
                return x
            if len(x) + count * (len(r) - len(p)) > cap:
                raise OverflowError  # sqlite3 reports it as "string or blob too big"
            return x.replace(p, r)
        xb, pb, rb = (s if isinstance(s, bytes) else s.encode() for s in (x, p, r))
        count = xb.count(pb)
        if len(xb) + count * (len(rb) - len(pb)) > cap:
            raise OverflowError
        result = xb.replace(pb, rb) if count else xb
        try:
            return result.decode()
        except UnicodeDecodeError:
            return result  # not UTF-8 (from a blob): SQLite answers text Python cannot hold; same bytes

    return replace


REPLACED_FUNCTIONS = ("printf", "format", "instr", "replace")


def refuse_slow_functions(connection: sqlite3.Connection, log: AuthorizerLog) -> None:
    """Replace each of :data:`SLOW_FUNCTIONS` on ``connection`` with one that refuses to run.

    The authorizer refuses them in statements, but SQLite does not consult it for the expressions of
    generated columns, CHECK constraints and indexes; those reach application functions while the
    schema is trusted for one statement (see :class:`~.database.GuardedConnection`). Call this after
    SQLAlchemy's own pool "connect" hook, which registers its Python ``regexp``.
    """
    for name in SLOW_FUNCTIONS:

        def refused(*_: object, name: str = name) -> object:
            log.slow_function_called = name
            raise FunctionRefused(f"{name}() is not available on this server")

        # SQLite prefers a function registered for the exact argument count over a variadic one, so
        # SQLAlchemy's two-argument regexp is replaced by its own count, and any other count too.
        # Deterministic (it always refuses), as SQLAlchemy's was: a schema using a non-deterministic
        # function in a generated column or index no longer parses, and the whole database would fail.
        connection.create_function(name, 2, refused, deterministic=True)
        connection.create_function(name, -1, refused, deterministic=True)


def install_functions(connection: sqlite3.Connection, log: AuthorizerLog, *, max_length: int) -> None:
    """Replace printf/format, instr and replace on ``connection`` (see the comment above)."""
    global _PRIVATE_LENGTH
    _PRIVATE_LENGTH = max_length
    printf = _printf(log, max_length)
    connection.create_function("printf", -1, printf, deterministic=True)
    connection.create_function("format", -1, printf, deterministic=True)
    connection.create_function("instr", 2, instr, deterministic=True)
    connection.create_function("replace", 3, _replace(max_length), deterministic=True)
