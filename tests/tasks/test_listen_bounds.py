"""Resource subscriptions are bounded: URIs per listen stream or session, streams per client and in all,
watched URIs in all; a change is matched through an index, and the server process stays small and
reachable however a client pushes at the caps."""

from __future__ import annotations

import warnings
from contextlib import AsyncExitStack
from pathlib import Path

import anyio
import pytest
from mcp import ClientSession
from mcp.client.subscriptions import listen
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError

from dockyard_shared.toolsets import Exposure
from dockyard_tasks.interest import Interest
from dockyard_tasks.notify import SUMMARY_URI, ResourceChange
from dockyard_tasks.server import create_server
from dockyard_tasks.settings import Settings, SubscriptionLimits
from tests.harness import LEGACY, MODERN, http_server, open_session
from tests.tasks.helpers import Inbox, tasks_launch


def bounded_server(url: str, **limits: int):
    settings = Settings(
        database_url=url,
        actor="ann",
        demo=True,
        exposure=Exposure(toolsets=("all",)),
        subscriptions=SubscriptionLimits(**limits),
    )
    return create_server(settings)


def sdk_session(session):
    """The SDK ``ClientSession`` under a harness session (fastmcp's Client wraps one)."""
    return session.raw if isinstance(session.raw, ClientSession) else session.raw.session


async def subscribe(session, uri: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MCPDeprecationWarning)
        await sdk_session(session).subscribe_resource(uri)


async def eventually(attempt, timeout: float = 15) -> None:
    """Retry ``attempt()`` until it does not raise MCPError: a stream's slot is freed when the server
    has seen its client go, a moment after the client's side has ended."""
    with anyio.fail_after(timeout):
        while True:
            try:
                await attempt()
                return
            except MCPError:
                await anyio.sleep(0.05)


async def listen_once(raw, uris: list[str]) -> None:
    async with listen(raw, resource_subscriptions=uris):
        pass


def many_tasks(count: int) -> list[str]:
    return [f"task://TASK-{n}" for n in range(1, count + 1)]


# -- through the protocol, in memory --------------------------------------------------------------------


async def test_a_listen_naming_more_uris_than_the_cap_is_refused_naming_the_flag(sqlite_url):
    async with open_session(bounded_server(sqlite_url), era=MODERN) as session:
        with pytest.raises(MCPError, match=r"names 1,001 resources.*--max-subscription-uris.*project://KEY"):
            async with listen(sdk_session(session), resource_subscriptions=many_tasks(1_001)):
                pass
        async with listen(sdk_session(session), resource_subscriptions=many_tasks(1_000)):
            pass  # at the cap: accepted


async def test_a_session_subscribing_past_its_cap_is_refused_naming_the_flag(sqlite_url):
    async with open_session(bounded_server(sqlite_url, uris_per_subscriber=3), era=LEGACY) as session:
        for uri in many_tasks(3):
            await subscribe(session, uri)
        await subscribe(session, "task://TASK-1")  # again: not one more
        with pytest.raises(MCPError, match="--max-subscription-uris"):
            await subscribe(session, "task://TASK-4")


async def test_one_client_holds_at_most_its_streams_and_gets_one_back_when_it_closes_one(sqlite_url):
    async with open_session(bounded_server(sqlite_url, streams_per_client=2), era=MODERN) as session:
        raw = sdk_session(session)
        async with AsyncExitStack() as held:
            first = await held.enter_async_context(listen(raw, resource_subscriptions=["task://TASK-1"]))
            await held.enter_async_context(listen(raw, resource_subscriptions=["task://TASK-2"]))
            with pytest.raises(
                MCPError, match=r"holds 2 subscriptions/listen streams.*--max-listen-streams-per-client"
            ):
                async with listen(raw, resource_subscriptions=["task://TASK-3"]):
                    pass
            await session.call_ok("update_task", {"task_id": "TASK-1", "title": "Still heard"})
            with anyio.fail_after(15):
                event = await anext(aiter(first))
            assert event.uri == "task://TASK-1"
        await eventually(lambda: listen_once(raw, ["task://TASK-3"]))  # the streams above ended


async def test_the_server_wide_stream_cap_refuses_further_listens(sqlite_url):
    async with open_session(bounded_server(sqlite_url, streams=1), era=MODERN) as session:
        raw = sdk_session(session)
        async with listen(raw, resource_subscriptions=[SUMMARY_URI]):
            with pytest.raises(MCPError, match=r"--max-listen-streams\b"):
                async with listen(raw, resource_subscriptions=[SUMMARY_URI]):
                    pass


async def test_watched_uris_are_capped_across_every_stream_and_session(sqlite_url):
    server = bounded_server(sqlite_url, uris=4)
    async with open_session(server, era=MODERN) as modern, open_session(server, era=LEGACY) as legacy:
        async with listen(sdk_session(modern), resource_subscriptions=many_tasks(3)):
            await subscribe(legacy, "project://TASK")
            with pytest.raises(MCPError, match=r"holds 4 resource subscriptions.*--max-subscribed-uris"):
                await subscribe(legacy, SUMMARY_URI)
            with pytest.raises(MCPError, match="--max-subscribed-uris"):
                async with listen(sdk_session(modern), resource_subscriptions=[SUMMARY_URI]):
                    pass
        await eventually(lambda: subscribe(legacy, SUMMARY_URI))  # the stream ended: room again


@pytest.mark.parametrize("era", [LEGACY, MODERN])
async def test_subscribers_still_hear_only_what_they_watch(sqlite_url, era):
    inbox = Inbox()
    server = bounded_server(sqlite_url)
    async with (
        open_session(server, era=era, message_handler=inbox.handle) as session,
        inbox.subscribed(session, ["task://TASK-2", "project://TASK"]),
    ):
        await session.call_ok("update_task", {"task_id": "TASK-3", "title": "Other"})
        await inbox.wait_for("project://TASK")
        await session.call_ok("update_task", {"task_id": "TASK-2", "title": "Mine"})
        await inbox.wait_for("task://TASK-2")
    assert "task://TASK-3" not in inbox.updated and SUMMARY_URI not in inbox.updated


# -- the index ---------------------------------------------------------------------------------------


def test_a_change_is_matched_by_its_own_uris_not_by_walking_every_watched_one():
    interest: Interest[str] = Interest()
    interest.add("a", ["task://WEB-1", "project://WEB", "task://APP-7"])
    interest.add("b", ["task://WEB-1", "task://WEB-2"])
    interest.add("c", [f"task://BIG-{n}" for n in range(50_000)])
    assert interest.count == 50_005

    one_task = ResourceChange(revision=1, uris=frozenset({"task://WEB-1", "project://WEB", SUMMARY_URI}))
    assert interest.matching(one_task) == {"a": ["project://WEB", "task://WEB-1"], "b": ["task://WEB-1"]}
    import_ = ResourceChange(revision=2, uris=frozenset({"project://APP"}), all_tasks_of=frozenset({"APP"}))
    assert interest.matching(import_) == {"a": ["task://APP-7"]}
    everything = ResourceChange(revision=0, uris=frozenset(), everything=True)
    assert set(interest.matching(everything)) == {"a", "b", "c"}

    interest.remove("c")
    interest.discard("a", ["task://APP-7"])
    assert interest.count == 4 and interest.matching(import_) == {}


# -- the server process ------------------------------------------------------------------------------


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads the server's RSS from /proc")
async def test_over_cap_listens_are_refused_and_the_server_stays_small(sqlite_url, log_dir):
    # Before the caps, 30 such streams took the server from 126 MB to 1.1 GB.
    huge = many_tasks(150_000)
    with http_server(tasks_launch(sqlite_url, "--demo"), log_dir=log_dir) as server:
        async with open_session(server.url(), era=MODERN) as session, AsyncExitStack() as held:
            await session.call_ok("list_projects")
            before = rss_mib(server.process.pid)
            refusals = []
            for _ in range(12):
                try:
                    await held.enter_async_context(listen(sdk_session(session), resource_subscriptions=huge))
                except MCPError as error:
                    refusals.append(str(error))
            after = rss_mib(server.process.pid)
            # Measured: 126 → 160 MiB with the caps (parsing each refused request), 127 → 418 without.
            assert after - before < 100, f"RSS grew from {before:.0f} to {after:.0f} MiB"
            assert len(refusals) == 12 and "--max-subscription-uris" in refusals[0]
            await session.call_ok("get_task", {"task_id": "TASK-1"})  # still serving


@pytest.mark.slow
async def test_other_clients_still_connect_while_one_client_holds_its_most_streams(sqlite_url, log_dir):
    # Before the caps, a client could fill --max-connections with listen streams, and every other
    # connection was closed as it arrived.
    launch = tasks_launch(sqlite_url, "--demo")
    extra = ("--max-connections", "24", "--max-listen-streams-per-client", "8")
    with http_server(launch, log_dir=log_dir, extra_args=extra) as server:
        async with open_session(server.url(), era=MODERN) as hog, AsyncExitStack() as held:
            streams, refused = [], []
            for n in range(1, 31):
                try:
                    streams.append(
                        await held.enter_async_context(
                            listen(sdk_session(hog), resource_subscriptions=[f"task://TASK-{n % 9 + 1}"])
                        )
                    )
                except MCPError as error:
                    refused.append(str(error))
            assert len(streams) == 8 and len(refused) == 22
            assert "--max-listen-streams-per-client" in refused[0]
            for era in (LEGACY, MODERN):
                async with open_session(server.url(), era=era, timeout=30) as other:
                    await other.call_ok("update_task", {"task_id": "TASK-2", "title": f"From {era}"})
            with anyio.fail_after(15):
                event = await anext(aiter(streams[0]))  # the first stream watches TASK-2
            assert event.uri == "task://TASK-2"


@pytest.mark.slow
async def test_event_streams_hold_at_most_half_the_connections_whatever_the_stream_caps(sqlite_url, log_dir):
    # The connection guard's own share, below any stream flag: listen streams (and 2025-11-25 GET
    # streams) cannot take every connection, so other requests are still served.
    launch = tasks_launch(sqlite_url, "--demo")
    extra = (
        "--max-connections",
        "20",
        "--max-listen-streams-per-client",
        "100",
        "--max-listen-streams",
        "100",
    )
    with http_server(launch, log_dir=log_dir, extra_args=extra) as server:
        async with open_session(server.url(), era=MODERN) as hog, AsyncExitStack() as held:
            streams, refused = [], []
            for n in range(1, 31):
                try:
                    streams.append(
                        await held.enter_async_context(
                            listen(sdk_session(hog), resource_subscriptions=[f"task://TASK-{n % 9 + 1}"])
                        )
                    )
                except MCPError as error:
                    refused.append(str(error))
            assert len(streams) == 10 and len(refused) == 20
            assert "Too many event streams are open on this server (10" in refused[0]
            for era in (LEGACY, MODERN):
                async with open_session(server.url(), era=era, timeout=30) as other:
                    await other.call_ok("update_task", {"task_id": "TASK-2", "title": f"From {era}"})
            with anyio.fail_after(15):
                event = await anext(aiter(streams[0]))  # the first stream watches TASK-2
            assert event.uri == "task://TASK-2"
        assert "HTTP event streams reached their share of the connection limit" in server.log()
