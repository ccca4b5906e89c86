"""Prompts: a standup report, planning a project from a goal, triage of overdue and blocked work.

Each prompt carries the tracker's current data so the model starts from facts. Every stored value a prompt
quotes (titles, assignees, the goal) is other people's text: it is fenced (``dockyard_shared.untrusted``)
so it reads as data; only our own words and task ids stand outside a fence.
"""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING, Annotated

from fastmcp import FastMCP
from pydantic import Field

from dockyard_shared.offload import run_in_thread
from dockyard_shared.toolsets import prompt
from dockyard_shared.untrusted import fence

from .models import NextTask, TaskRow
from .rules import parse_project_key

if TYPE_CHECKING:  # the store may open after initialize (opening.py); prompts read it in worker threads
    from .store import TaskStore

__all__ = ["register"]

SHOWN = 30  # tasks listed per section of a prompt


def _lines(rows: list[TaskRow], source: str) -> str:
    if not rows:
        return "(none)"
    listed = "\n".join(
        f"- {r.id} [{r.status}, {r.priority}{', due ' + r.due if r.due else ''}"
        f"{', ' + r.assignee if r.assignee else ''}] {r.title}"
        for r in rows
    )
    return fence(listed, source)


def _next(upcoming: NextTask) -> str:
    """next_task's pick, built from its fields: its ``reason`` quotes the assignee, a stored value that
    belongs inside the fence."""
    if upcoming.task is None:
        waiting = (
            f"; {len(upcoming.skipped_blocked)} wait on open blockers" if upcoming.skipped_blocked else ""
        )
        return f"(none: no todo task is free to start{waiting})"
    text = "the highest-priority todo task with no open blocker:\n" + _lines(
        [upcoming.task], "title of the next task"
    )
    if upcoming.unchecked_criteria:
        criteria = "\n".join(f"- {c}" for c in upcoming.unchecked_criteria)
        text += "\nIt is done when these unchecked acceptance criteria are met:\n" + fence(
            criteria, "acceptance criteria of the next task"
        )
    if upcoming.next_step:
        text += "\nIts next plan step: " + fence(upcoming.next_step, "plan step of the next task")
    if upcoming.skipped_blocked:
        text += f"\nSkipped, waiting on open blockers: {', '.join(upcoming.skipped_blocked)}"
    return text


def register(server: FastMCP, store: TaskStore, served: tuple[str, ...]) -> None:
    """The prompts, each naming only tools that are ``served`` (plan_project needs the manage toolset's
    create_project and create_tasks, and is left out without them)."""

    def rows(**fields) -> list[TaskRow]:
        from .store import TaskFilter

        return store.list_tasks(TaskFilter(**fields), limit=SHOWN).tasks

    @prompt(server)
    async def standup(assignee: Annotated[str, Field(description="Whose standup.")]) -> str:
        """A standup report for one person: done recently, in progress, next, blocked."""

        def gather() -> str:
            since = (store.clock() - timedelta(days=1)).date()
            done = [r for r in rows(assignee=assignee, statuses=("done",), sort="updated")]
            doing = rows(assignee=assignee, statuses=("in_progress",))
            blocked = rows(assignee=assignee, statuses=("blocked",))
            upcoming = store.next_task(assignee)
            return (
                f"Write a short standup report for {fence(assignee, 'assignee')} from the tracker data below "
                f"(done items: the most recently updated first; look for those updated since {since}).\n\n"
                f"Done:\n{_lines(done[:10], 'titles of done tasks')}\n\n"
                f"In progress:\n{_lines(doing, 'titles of tasks in progress')}\n\n"
                f"Blocked:\n{_lines(blocked, 'titles of blocked tasks')}\n\n"
                f"Next: {_next(upcoming)}\n\n"
                "Three sections — Yesterday, Today, Blockers — one line per task with its id. Use get_task "
                "for detail (its criteria and plan say what is left); for blockers, say who or what each "
                "waits on (open_blockers)."
            )

        return await run_in_thread(gather)

    async def plan_project(
        goal: Annotated[str, Field(description="What the project should achieve.")],
        project: Annotated[str, Field(description="Key of the project to plan into (created if missing).")],
    ) -> str:
        """Plan a project from a goal: break it into tasks with priorities and dependencies, then create them."""
        key = parse_project_key(project)
        exists = key in await run_in_thread(lambda: store.project_keys(key))
        start = (
            f"Project {key} exists: call list_tasks project={key} first and do not duplicate its tasks."
            if exists
            else f"Create the project first: create_project key={key}."
        )
        return (
            f"Plan the goal below as project {key}.\n\n{fence(goal[:4_000], 'goal')}\n\n"
            f"{start}\n"
            "1. Break the goal into 5–15 concrete tasks, each finishable by one person in a few days; "
            "group them under 1–3 parent tasks when that helps.\n"
            "2. Give each a priority (urgent, high, medium, low) and, where order matters, blocked_by.\n"
            "3. Create them all with one create_tasks call (≤ 100 items): refer to items of the same batch "
            "as @0, @1… in parent and blocked_by. The batch is all or nothing; fix any item it names.\n"
            "4. For each task, record what done means as acceptance criteria (update_checklist "
            "kind=criteria, 1–5 checkable lines) and, where it helps, its steps (kind=plan); put tasks "
            "of one stream of work on a workstream (move_tasks workstream=…). done is refused while a "
            "criterion is unchecked: tick each (check=[n]) when it is met.\n"
            "5. Summarise the plan: the tasks by id, the critical path, and what to start first (next_task)."
        )

    if {"create_project", "create_tasks"} <= set(served):
        prompt(server)(plan_project)
    apply_with = "update_task or update_task_status" if "update_task" in served else "update_task_status"

    @prompt(server)
    async def triage(
        project: Annotated[str, Field(description="A project key; empty for every project.")] = "",
    ) -> str:
        """Triage overdue and blocked work: what to reschedule, reassign, unblock or cancel."""
        key = parse_project_key(project) if project else None

        def gather() -> str:
            today = store.clock().date()
            overdue = rows(
                project=key, statuses=("todo", "in_progress", "blocked"), due_before=today, sort="due"
            )
            blocked = rows(project=key, statuses=("blocked",), sort="priority")
            scope = f"project {key}" if key else "every project"
            return (
                f"Triage the overdue and blocked work of {scope} (today is {today}).\n\n"
                f"Overdue (earliest first, at most {SHOWN}):\n{_lines(overdue, 'titles of overdue tasks')}\n\n"
                f"Blocked (highest priority first, at most {SHOWN}):\n{_lines(blocked, 'titles of blocked tasks')}\n\n"
                "For each task, read it with get_task (its open_blockers and history), then propose one "
                "action: reschedule (a new due date), reassign, unblock (what must happen first), split, or "
                f"cancel. Do not change anything until the user agrees; then apply it with {apply_with}, "
                "passing expected_version."
            )

        return await run_in_thread(gather)
