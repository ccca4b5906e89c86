"""Sign-in and replicas together, as a team deploys them: three dockyard-tasks replicas on PostgreSQL, each
verifying tokens of a real OpenID Connect provider (oidc-provider on loopback), behind HAProxy running
deploy/haproxy/haproxy.cfg. A client that got its token through the client-credentials grant works through
the balancer in both protocol eras; what it changes is recorded as its actor whichever replica answers; a
call without a token is refused at every replica. (Killing a replica is tests/tasks/test_load_balancer.py.)"""

from __future__ import annotations

from contextlib import ExitStack

import httpx
import pytest

from tests.harness import ERAS, LEGACY, MODERN, http_server, open_session
from tests.postgres import postgres_schema, postgres_unavailable
from tests.signin.oidc import ACCEPT, AUDIENCE, PING, Client, missing_provider, new_key, provider
from tests.tasks.helpers import tasks_launch
from tests.tasks.test_load_balancer import haproxy

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(missing_provider() is not None, reason=missing_provider() or ""),
]

WRITER = Client("writer", "writer-secret-0123456789", "tasks:read tasks:write")


async def test_a_signed_in_client_works_through_the_balancer_in_both_eras(tmp_path, log_dir):
    if reason := postgres_unavailable():
        pytest.skip(reason)
    with ExitStack() as stack:
        postgres_url = stack.enter_context(postgres_schema())
        idp = stack.enter_context(provider(tmp_path, keys=[new_key("k1")], clients=[WRITER]))
        # Every replica names the same audience: a token is for the service, not for one process.
        signed_in = ("--auth", "jwt", "--auth-issuer", idp.issuer, "--auth-audience", AUDIENCE)
        flags = ("--trusted-proxy", "127.0.0.1/32")
        replicas = [
            stack.enter_context(
                http_server(
                    tasks_launch(postgres_url, *flags, *(("--demo",) if i == 0 else ())),
                    extra_args=signed_in,
                    log_dir=log_dir,
                )
            )
            for i in range(3)
        ]
        url = stack.enter_context(haproxy([r.base_url.removeprefix("http://") for r in replicas], log_dir))
        url += "/mcp"

        # No token: 401 with the challenge that says where to sign in, whichever replica answers.
        for _ in range(3):
            refused = httpx.post(url, json=PING, headers=ACCEPT, timeout=10)
            assert refused.status_code == 401 and "resource_metadata" in refused.headers["www-authenticate"]

        token = idp.token(WRITER)
        headers = {"Authorization": f"Bearer {token}"}
        statuses = {LEGACY: "in_progress", MODERN: "blocked"}
        for era in ERAS:
            async with open_session(url, era=era, headers=headers) as session:
                await session.call_ok(
                    "update_task_status", {"task_id": "TASK-5", "new_status": statuses[era]}
                )
        # Read back: both changes are there, each recorded as the signed-in client, though round robin
        # spread the calls over the replicas.
        async with open_session(url, era=MODERN, headers=headers) as session:
            history = (await session.call_ok("get_task", {"task_id": "TASK-5"})).data["history"]
        changes = [h for h in history if h["field"] == "status"][-2:]
        assert [h["new"] for h in changes] == [statuses[LEGACY], statuses[MODERN]], history
        assert {h["actor"] for h in changes} == {"writer"}
