"""Where this server's statements run: a small pool of worker processes that can be killed.

Both sides of the pipe live here. The server's side: :mod:`.pool` (``WorkerPool``, handing out a
``Lease`` per call), :mod:`.process` (``WorkerProcess``, one worker and its pipes), :mod:`.connection`
(``lease_connection``: a ``RemoteConnection`` on a lease), :mod:`.limits` and :mod:`.errors`. The worker's
side: :mod:`.child`. What both agree on, the framing, the messages and SQLite's limits: :mod:`.protocol`.

Every statement runs in a worker process, leased for one call as a ``RemoteConnection`` — the few parts
of ``sqlite3.Connection`` and ``Cursor`` the catalog, paging and write code use, each a round trip of a
pickled tuple over a pipe (measured: ~12 µs). What that buys:

- **Time.** A statement past its deadline is interrupted by SQLite's progress handler in the worker;
  one that cannot be (still compiling, or inside one long function call) is killed when its deadline
  plus ``KILL_MARGIN_S`` has passed, and the worker replaced. A cancelled request kills its
  worker at once, so it stops burning CPU.
- **Memory.** Each worker's address space is capped, and SQLite's heap within it; the pool never runs
  more than ``size`` workers, so the server's memory has a bound (``WorkerLimits``).
- **Availability.** The event loop never waits on SQLite; when every worker is busy a call waits up to
  its time limit for one, then fails with a retryable "busy" problem (``workers_busy``).

Errors come back as the same ``sqlite3`` exception classes (with SQLite's message), so the code that
turns them into problems is the same as for an in-process connection; a killed worker is
``StatementStopped`` ("interrupted"), one that died by itself ``WorkerDied``.

This module imports nothing: the worker process imports this package before :mod:`.child`, and starts
faster for it. Import from the modules themselves.
"""
