"""The task store: every read and write of the tracker, on SQLite or PostgreSQL, with no MCP in sight.

:class:`TaskStore` is the facade the protocol layer calls. Each method is one transaction: a write
either commits all it did (a whole batch, a whole import) or nothing, records every change in the
activity history under one revision, and after commit tells the store's listeners what changed
(``subscribe``), which is how resource subscribers hear about it.

Methods are blocking; the server runs them in worker threads (``dockyard_shared.offload``).
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from sqlalchemy import Connection, text
from sqlalchemy.exc import DBAPIError

from dockyard_shared import InvalidArgument, NotFound, Problem, UpstreamUnavailable

from ..board import PER_COLUMN_MAX, Board
from ..drafts import IssueDraft, TaskChanges, TaskDraft
from ..listeners import Listeners
from ..models import (
    BatchItem,
    BatchResult,
    ChangePage,
    ChecklistResult,
    CommentResult,
    DeleteResult,
    DependencyResult,
    ImportResult,
    MoveResult,
    NextTask,
    ProjectExport,
    ProjectInfo,
    ProjectList,
    Summary,
    TaskDetail,
    TaskPage,
    UpdateResult,
)
from ..notices import channel_for_schema, payload_parts
from ..rules import check_name, check_workstream, format_task_id, parse_project_key, parse_task_id
from . import (
    board,
    checklists,
    completions,
    detail,
    feed,
    importing,
    links,
    moves,
    mutations,
    queries,
    sources,
    summary,
    transfer,
)
from .engine import STATEMENT_TIMEOUT_S, WRITE, is_postgres, make_engine, shown_url
from .errors import problem_for
from .history import ChangeEvent, Recorder
from .migrate import check_sqlite_file, migrate
from .next import next_task as find_next_task
from .queries import TaskFilter
from .rows import UNREADABLE
from .unreadable import unreadable_in

if TYPE_CHECKING:
    from ..import_steps import ImportSteps

__all__ = ["ChangeEvent", "StoreLimits", "TaskChanges", "TaskDraft", "TaskFilter", "TaskStore"]

log = logging.getLogger(__name__)

Listener = Callable[[ChangeEvent], None]


@dataclass(frozen=True)
class StoreLimits:
    page_default: int = 50  # list_tasks rows when the caller does not say
    page_max: int = 200
    page_chars: int = 60_000  # JSON characters per page of tasks or changes (~15,000 tokens)
    batch_max: int = 100  # tasks per create_tasks call
    related: int = 50  # subtasks, blockers and blocked tasks shown by get_task and add_dependency
    history: int = 20  # comments and changes shown by get_task
    projects: int = 200
    summary_groups: int = 50  # assignees and projects shown in a summary
    export_tasks: int = 200  # tasks per export page
    import_tasks: int = 5_000


def utc_now() -> datetime:
    """Naive UTC, to the second (what the schema stores; see schema.py)."""
    return datetime.now(UTC).replace(tzinfo=None, microsecond=0)


class TaskStore:
    def __init__(
        self,
        url: str,
        *,
        limits: StoreLimits | None = None,
        clock: Callable[[], datetime] = utc_now,
        pool_size: int = 5,
        statement_timeout_s: float = STATEMENT_TIMEOUT_S,
    ) -> None:
        self.url = url
        self.limits = limits or StoreLimits()
        self.clock = clock
        # PostgreSQL: the longest a statement, or its wait for a lock, may take (store/engine.py).
        self.statement_timeout_s = statement_timeout_s
        check_sqlite_file(url)  # a file it must refuse is refused before the engine touches it
        self.engine = make_engine(url, pool_size=pool_size, statement_timeout_s=statement_timeout_s)
        try:
            migrate(self.engine)
        except DBAPIError as error:
            self.engine.dispose()
            raise UpstreamUnavailable(
                f"Cannot open the task database {shown_url(self.engine.url.render_as_string())}: {error.orig}",
                next_step="Check --database-url and that the database server is running.",
            ) from None
        self.postgres = is_postgres(self.engine)
        if not self.postgres:
            self._refresh_statistics()
        self._listeners: Listeners[ChangeEvent] = Listeners()
        # PostgreSQL: each write transaction sends a NOTIFY on its schema's channel (notices.py), naming
        # this store as its origin, so replicas hear the change and this process's feed skips its own.
        self.origin = uuid.uuid4().hex
        self.channel = self._channel_of_schema() if self.postgres else None
        self._summary_cache: dict[tuple, Summary] = {}
        self._projects = queries.ProjectDirectory()

    def _refresh_statistics(self) -> None:
        """SQLite plans by its statistics, which nothing else keeps: sample them at start-up (a few ms;
        without them counting overdue tasks took a table lookup per open task). PostgreSQL's autovacuum
        keeps its own."""
        try:
            with self.engine.connect().execution_options(**{WRITE: True}) as connection, connection.begin():
                connection.exec_driver_sql("PRAGMA analysis_limit=1000")
                connection.exec_driver_sql("ANALYZE")
        except DBAPIError as error:
            # A read-only or full database still serves reads: each write then says why it failed.
            log.warning("the database's statistics were not refreshed: %s", error.orig)

    def _channel_of_schema(self) -> str:
        """One channel per database schema, so stores in different schemas do not hear each other."""
        with self.engine.connect() as connection:
            schema = connection.execute(text("SELECT current_schema()")).scalar() or "public"
        return channel_for_schema(schema)

    def _announcement(self, event: ChangeEvent) -> tuple[str, str, str]:
        head, tail = payload_parts(self.origin, event.projects, event.tasks, event.new_projects)
        return self.channel or "", head, tail

    def close(self) -> None:
        self.engine.dispose()

    # -- listeners -----------------------------------------------------------------------------

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        """Call ``listener(event)`` after each committed write of this process; returns unsubscribe."""
        return self._listeners.add(listener)

    def publish(self, event: ChangeEvent) -> None:
        self._listeners.call(event)  # after commit: one broken listener must not fail the write

    # -- transactions ----------------------------------------------------------------------------

    @contextmanager
    def _reading_connection(self) -> Iterator[Connection]:
        """A read transaction on a plain connection: every read's one path (Core statements, no Session)."""
        try:
            with self.engine.connect() as connection:
                if self.postgres:
                    # One snapshot for every query of the call (get_task, summary read several tables).
                    connection = connection.execution_options(isolation_level="REPEATABLE READ")
                with connection.begin():
                    yield connection
        except DBAPIError as error:
            problem = problem_for(error, writing=False, timeout_s=self.statement_timeout_s)
            raise (self._unreadable() if not problem.retryable else None) or problem from None
        except UNREADABLE as error:
            # A stored value the answer could not be built from (unreadable.py); else the failure is ours.
            problem = self._unreadable()
            if problem is None:
                raise
            raise problem from error

    def _unreadable(self) -> Problem | None:
        """The tasks whose stored values this server cannot read, as an error naming them; None if none.
        PostgreSQL's types and checks refuse such values when they are written."""
        return None if self.postgres else unreadable_in(self.engine)

    @contextmanager
    def _writing_connection(
        self, actor: str, before_commit: Callable[[], None] | None = None
    ) -> Iterator[tuple[Connection, Recorder]]:
        """A write transaction on a plain connection: the history of its changes is written last, under
        the next revision, and after the commit this process's listeners hear of it. ``before_commit``
        runs last before the commit; what it raises rolls everything back."""
        actor = check_name(actor, field="actor")
        event = None
        committing = False
        try:
            with (
                self.engine.connect().execution_options(**{WRITE: True}) as connection,
                connection.begin(),
            ):
                recorder = Recorder(connection, actor, self.clock())
                yield connection, recorder
                event = recorder.finish(
                    postgres=self.postgres, announce=self._announcement if self.channel else None
                )
                if before_commit is not None:
                    before_commit()
                committing = True  # leaving the block commits: a failure now may come after the commit landed
        except DBAPIError as error:
            raise problem_for(
                error, writing=True, committing=committing, timeout_s=self.statement_timeout_s
            ) from None
        if event is not None and event.revision:
            self.publish(event)

    # -- reads -------------------------------------------------------------------------------------

    def list_projects(self) -> ProjectList:
        with self._reading_connection() as connection:
            return queries.list_projects(connection, limit=self.limits.projects)

    def project(self, key: str) -> ProjectInfo:
        key = parse_project_key(key)
        with self._reading_connection() as s:
            return queries.project_info(s, key)

    def list_tasks(
        self, query: TaskFilter, *, limit: int | None = None, full: bool = False, cursor: str | None = None
    ) -> TaskPage:
        limit = min(max(1, limit or self.limits.page_default), self.limits.page_max)
        with self._reading_connection() as connection:
            return queries.list_tasks(
                connection,
                query,
                limit=limit,
                max_chars=self.limits.page_chars,
                full=full,
                cursor=cursor,
                projects=self._projects,
            )

    def get_task(self, task_id: str) -> TaskDetail:
        ref = parse_task_id(task_id)
        try:
            with self._reading_connection() as connection:
                return detail.get_task(
                    connection,
                    ref,
                    related_limit=self.limits.related,
                    history_limit=self.limits.history,
                )
        except NotFound:
            with self._reading_connection() as connection:
                where = moves.moved_to(connection, str(ref))
            if where is None:
                raise
            raise NotFound(
                f"Task {ref} was moved: it is {where} now (move_tasks renumbers a task moved to another project).",
                next_step=f"Use {where}.",
            ) from None

    def next_task(self, assignee: str, project: str | None = None, workstream: str | None = None) -> NextTask:
        assignee = check_name(assignee, field="assignee")
        key = parse_project_key(project) if project else None
        stream = check_workstream(workstream)
        with self._reading_connection() as connection:
            return find_next_task(
                connection, assignee=assignee, project=key, projects=self._projects, workstream=stream
            )

    def changes_since(
        self, cursor: str | None = None, *, project: str | None = None, limit: int = 100
    ) -> ChangePage:
        key = parse_project_key(project) if project else None
        limit = min(max(1, limit), self.limits.page_max)
        with self._reading_connection() as s:
            return feed.changes_since(s, cursor, project=key, limit=limit, max_chars=self.limits.page_chars)

    def summary(self, project: str | None = None) -> Summary:
        """Computed by SQL aggregation; kept until the next change (any replica's) or the next day."""
        key = parse_project_key(project) if project else None
        today = self.clock().date()
        with self._reading_connection() as connection:
            revision = feed.current_revision(connection)
            cache_key = (key, today, revision)
            kept = self._summary_cache.get(cache_key)
            if kept is not None:
                return kept
            result = summary.summary(
                connection,
                today=today,
                project=key,
                max_groups=self.limits.summary_groups,
                revision=revision,
            )
        if len(self._summary_cache) > 64:
            self._summary_cache.clear()
        self._summary_cache[cache_key] = result
        return result

    def export_project(self, key: str, cursor: str | None = None) -> ProjectExport:
        key = parse_project_key(key)
        with self._reading_connection() as s:
            return transfer.export_page(
                s, key, cursor, max_tasks=self.limits.export_tasks, max_chars=self.limits.page_chars
            )

    def board(self, key: str, per_column: int) -> Board:
        """The project's tasks by status, ``per_column`` a column (store/board.py)."""
        key = parse_project_key(key)
        per_column = min(max(1, per_column), PER_COLUMN_MAX)
        with self._reading_connection() as connection:
            return board.read_board(connection, key, per_column=per_column)

    def revision(self) -> int:
        with self._reading_connection() as s:
            return feed.current_revision(s)

    # -- completions ---------------------------------------------------------------------------------

    def project_keys(self, prefix: str = "", limit: int = 50) -> list[str]:
        with self._reading_connection() as s:
            return completions.project_keys(s, prefix, limit)

    def task_ids(self, prefix: str = "", limit: int = 50) -> list[str]:
        with self._reading_connection() as s:
            return completions.task_ids(s, prefix, limit)

    def assignees(self, prefix: str = "", limit: int = 50) -> list[str]:
        with self._reading_connection() as s:
            return completions.assignees(s, prefix, limit)

    # -- writes ---------------------------------------------------------------------------------------

    def create_project(self, key: str, name: str, description: str = "", *, actor: str) -> ProjectInfo:
        with self._writing_connection(actor) as (s, rec):
            return mutations.create_project(s, rec, key, name, description)

    def create_task(self, draft: TaskDraft, *, actor: str) -> UpdateResult:
        with self._writing_connection(actor) as (connection, rec):
            ((task, key),) = mutations.create_tasks(connection, rec, [draft], batch=False)
            row = mutations.created_row(connection, task, key)
        return UpdateResult(task=row, changed=["created"], version=1)

    def create_tasks(self, drafts: Sequence[TaskDraft], *, actor: str) -> BatchResult:
        if not drafts:
            raise InvalidArgument("The batch is empty.", next_step="Pass at least one task.")
        if len(drafts) > self.limits.batch_max:
            raise InvalidArgument(
                f"The batch holds {len(drafts)} tasks; one call creates at most {self.limits.batch_max}.",
                next_step=f"Split it into batches of up to {self.limits.batch_max}.",
            )
        with self._writing_connection(actor) as (connection, rec):
            created = mutations.create_tasks(connection, rec, drafts, batch=True)
            items = [
                BatchItem(index=i, id=format_task_id(key, task.number), title=task.title)
                for i, (task, key) in enumerate(created)
            ]
        return BatchResult(created=items, count=len(items))

    def update_task(
        self,
        task_id: str,
        changes: TaskChanges,
        *,
        actor: str,
        expected_version: int | None = None,
        force: bool = False,
    ) -> UpdateResult:
        ref = parse_task_id(task_id)
        with self._writing_connection(actor) as (connection, rec):
            row, changed = mutations.update_task(
                connection, rec, ref, changes, expected_version=expected_version, force=force
            )
        note = None if changed else "Nothing changed: every value given was already the task's."
        return UpdateResult(task=row, changed=changed, version=row.version or 0, note=note)

    def set_status(
        self,
        task_id: str,
        new_status: str,
        *,
        actor: str,
        force: bool = False,
        expected_version: int | None = None,
    ) -> UpdateResult:
        return self.update_task(
            task_id,
            TaskChanges(status=new_status),
            actor=actor,
            expected_version=expected_version,
            force=force,
        )

    def add_comment(self, task_id: str, body: str, *, actor: str) -> CommentResult:
        ref = parse_task_id(task_id)
        with self._writing_connection(actor) as (s, rec):
            return links.add_comment(s, rec, ref, body)

    def add_dependency(self, task_id: str, blocked_by: str, *, actor: str) -> DependencyResult:
        ref, blocker = parse_task_id(task_id), parse_task_id(blocked_by)
        with self._writing_connection(actor) as (s, rec):
            return links.link(s, rec, ref, blocker, add=True, limit=self.limits.related)

    def remove_dependency(self, task_id: str, blocked_by: str, *, actor: str) -> DependencyResult:
        ref, blocker = parse_task_id(task_id), parse_task_id(blocked_by)
        with self._writing_connection(actor) as (s, rec):
            return links.link(s, rec, ref, blocker, add=False, limit=self.limits.related)

    def delete_task(self, task_id: str, *, actor: str) -> DeleteResult:
        ref = parse_task_id(task_id)
        with self._writing_connection(actor) as (s, rec):
            return links.delete_task(s, rec, ref)

    def import_project(
        self, document: object, *, actor: str, key: str | None = None, steps: ImportSteps | None = None
    ) -> ImportResult:
        """``steps`` (import_steps.py): checkpoints that report progress and may stop the import; after
        its last, ``commit``, the transaction commits."""
        limit = self.limits.import_tasks
        with self._writing_connection(actor, before_commit=steps.commit if steps else None) as (s, rec):
            if steps is None:
                return importing.import_document(s, rec, document, key=key, max_tasks=limit)
            return importing.import_document(s, rec, document, key=key, max_tasks=limit, steps=steps)

    def update_checklist(
        self,
        task_id: str,
        kind: str,
        *,
        actor: str,
        items: Sequence[str] | None = None,
        check: Sequence[int] = (),
        uncheck: Sequence[int] = (),
        expected_version: int | None = None,
    ) -> ChecklistResult:
        ref = parse_task_id(task_id)
        with self._writing_connection(actor) as (s, rec):
            return checklists.update_checklist(
                s,
                rec,
                ref,
                kind,
                items=items,
                check=check,
                uncheck=uncheck,
                expected_version=expected_version,
                check_version=mutations.check_version,
            )

    def move_tasks(
        self,
        task_ids: Sequence[str],
        *,
        actor: str,
        project: str | None = None,
        workstream: str | None = None,
    ) -> MoveResult:
        refs = [parse_task_id(t) for t in task_ids]
        with self._writing_connection(actor) as (s, rec):
            return moves.move_tasks(s, rec, refs, project=project, workstream=workstream)

    def upsert_issues(
        self, project: str, issues: Sequence[IssueDraft], *, actor: str, workstream: str | None = None
    ) -> list[tuple[IssueDraft, str, str]]:
        key = parse_project_key(project)
        stream = check_workstream(workstream)
        with self._writing_connection(actor) as (s, rec):
            return sources.upsert_issues(s, rec, key, issues, workstream=stream)
