"""Sign-in with a real OpenID Connect provider (--auth jwt): a host-like client gets a token through the
client-credentials grant, calls tools over Streamable HTTP in both eras, and is the actor in the history;
expired, wrong-audience, wrong-issuer, unsigned and rotated-out-key tokens are refused with 401."""

from __future__ import annotations

import json
import socket
import time

import httpx
import pytest

from tests.harness import ERAS, MODERN, http_server, open_session
from tests.signin.oidc import (
    ACCEPT,
    AUDIENCE,
    OPAQUE_AUDIENCE,
    OTHER_AUDIENCE,
    PING,
    Client,
    claims_of,
    host_sign_in,
    missing_provider,
    new_key,
    provider,
    signed,
    unsigned,
)
from tests.tasks.helpers import tasks_launch

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(missing_provider() is not None, reason=missing_provider() or ""),
]

WRITER = Client("writer", "writer-secret-0123456789", "tasks:read tasks:write", email="wren@example.com")
READER = Client("reader", "reader-secret-0123456789", "tasks:read", email="rory@example.com")
BRIEF = Client("brief", "brief-secret-01234567890", "tasks:read tasks:write", ttl=1)
# A bare ping outside a session: past the sign-in it is the MCP transport's 400 (no session), not 401.
ACCEPTED = 400


@pytest.fixture
def sqlite_url(tmp_path) -> str:
    return f"sqlite:///{tmp_path / 'tracker.db'}"


def signed_in(issuer: str, *extra: str, audience: str | None = AUDIENCE) -> tuple[str, ...]:
    named = ("--auth-audience", audience) if audience else ()  # none: the server's own URL
    return ("--auth", "jwt", "--auth-issuer", issuer, *named, *extra)


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def status_with(url: str, token: str) -> int:
    return httpx.post(url, json=PING, headers={**ACCEPT, **bearer(token)}, timeout=10).status_code


@pytest.mark.parametrize("era", ERAS)
async def test_a_signed_in_client_is_the_actor_and_its_scopes_pick_the_tools(
    sqlite_url, tmp_path, log_dir, era
):
    with (
        provider(tmp_path, keys=[new_key("k1")], clients=[WRITER, READER]) as idp,
        http_server(
            tasks_launch(sqlite_url, "--demo"),
            extra_args=signed_in(idp.issuer, audience=None),
            log_dir=log_dir,
        ) as server,
    ):
        token = host_sign_in(server.url(), WRITER)
        assert (
            claims_of(token)["aud"] == server.url() and claims_of(token)["scope"] == "tasks:read tasks:write"
        )
        async with open_session(server.url(), era=era, headers=bearer(token)) as session:
            await session.call_ok("update_task_status", {"task_id": "TASK-5", "new_status": "in_progress"})
            history = (await session.call_ok("get_task", {"task_id": "TASK-5"})).data["history"]
        assert history[-1]["actor"] == "writer" and history[-1]["new"] == "in_progress"

        reader = idp.token(READER, resource=server.url())
        async with open_session(server.url(), era=era, headers=bearer(reader)) as session:
            names = await session.tool_names()
            assert {"get_task", "list_tasks"} <= names
            assert not {"create_task", "update_task_status", "add_comment", "delete_task"} & names
            refused = await session.call_error("add_comment", {"task_id": "TASK-1", "body": "hi"})
            assert "tasks:write" in refused and "reader" in refused
            assert (await session.call_ok("get_task", {"task_id": "TASK-1"})).data["comments"] == []


async def test_the_actor_claim_and_the_allow_list(sqlite_url, tmp_path, log_dir):
    extra = ("--auth-actor-claim", "email", "--auth-allowed-actor", "wren@example.com")
    with (
        provider(tmp_path, keys=[new_key("k1")], clients=[WRITER, READER]) as idp,
        http_server(
            tasks_launch(sqlite_url, "--demo"), extra_args=signed_in(idp.issuer, *extra), log_dir=log_dir
        ) as server,
    ):
        async with open_session(server.url(), era=MODERN, headers=bearer(idp.token(WRITER))) as session:
            await session.call_ok("add_comment", {"task_id": "TASK-1", "body": "signed in"})
            comments = (await session.call_ok("get_task", {"task_id": "TASK-1"})).data["comments"]
        assert [(c["author"], c["body"]) for c in comments] == [("wren@example.com", "signed in")]
        assert status_with(server.url(), idp.token(READER)) == 401  # rory@example.com is not listed


async def test_the_server_says_where_to_sign_in(sqlite_url, tmp_path, log_dir):
    with (
        provider(tmp_path, keys=[new_key("k1")], clients=[WRITER]) as idp,
        http_server(tasks_launch(sqlite_url), extra_args=signed_in(idp.issuer), log_dir=log_dir) as server,
    ):
        metadata_url = server.base_url + "/.well-known/oauth-protected-resource/mcp"
        metadata = httpx.get(metadata_url, timeout=10).json()
        assert metadata["resource"] == server.url() and metadata["authorization_servers"] == [
            idp.issuer + "/"
        ]
        answer = httpx.post(server.url(), json=PING, headers=ACCEPT, timeout=10)
        assert answer.status_code == 401
        challenge = answer.headers["www-authenticate"]
        assert challenge.startswith("Bearer ") and f'resource_metadata="{metadata_url}"' in challenge
        invalid = httpx.post(server.url(), json=PING, headers={**ACCEPT, **bearer("not-a-jwt")}, timeout=10)
        assert invalid.status_code == 401 and 'error="invalid_token"' in invalid.headers["www-authenticate"]
        assert httpx.get(server.url("/health"), timeout=10).status_code == 200


async def test_bad_tokens_are_refused(sqlite_url, tmp_path, log_dir):
    key = new_key("k1")
    with (
        provider(tmp_path, keys=[key], clients=[WRITER, BRIEF]) as idp,
        provider(tmp_path, keys=[key], clients=[WRITER]) as impostor,  # same key, another issuer
        http_server(tasks_launch(sqlite_url), extra_args=signed_in(idp.issuer), log_dir=log_dir) as server,
    ):
        good = idp.token(WRITER)
        assert status_with(server.url(), good) == ACCEPTED  # so each refusal below is the token's fault
        brief = idp.token(BRIEF)
        cases = {
            "wrong audience": idp.token(WRITER, resource=OTHER_AUDIENCE),
            "wrong issuer": impostor.token(WRITER),
            "unsigned": unsigned(claims_of(good), kid="k1"),
            "unsigned, scope changed": unsigned({**claims_of(good), "scope": "tasks:write"}, kid="k1"),
            # Signed with the provider's own key, with claims its flows never issue (FastMCP alone accepts
            # both: it checks exp only when present, and neither iat nor nbf).
            "no expiry": signed({k: v for k, v in claims_of(good).items() if k != "exp"}, key),
            "issued in the future": signed({**claims_of(good), "iat": time.time() + 600}, key),
            "not valid yet": signed({**claims_of(good), "nbf": time.time() + 600}, key),
            "no actor": signed({k: v for k, v in claims_of(good).items() if k != "sub"}, key),
        }
        assert status_with(server.url(), signed(claims_of(good), key)) == ACCEPTED  # the key signs well
        assert claims_of(cases["wrong audience"])["aud"] == OTHER_AUDIENCE
        assert claims_of(cases["wrong issuer"])["iss"] != claims_of(good)["iss"]
        expires = claims_of(brief)["exp"]
        while time.time() <= expires:  # the token's own expiry, not a guess
            time.sleep(0.05)
        cases["expired"] = brief
        assert {why: status_with(server.url(), token) for why, token in cases.items()} == dict.fromkeys(
            cases, 401
        )


async def test_a_token_signed_by_a_rotated_out_key_is_refused(sqlite_url, tmp_path, log_dir):
    old_key, new = new_key("old"), new_key("new")
    with provider(tmp_path, keys=[old_key], clients=[WRITER]) as idp:
        issuer, port = idp.issuer, idp.port
        old_token = idp.token(WRITER)
        with http_server(
            tasks_launch(sqlite_url),
            extra_args=signed_in(issuer, "--auth-jwks-refresh", "0"),
            log_dir=log_dir,
        ) as server:
            assert status_with(server.url(), old_token) == ACCEPTED  # the server now holds the old key
            idp.process.terminate()
            idp.process.wait(timeout=10)
            # The provider rotates: same issuer (same port), only the new key published.
            with provider(tmp_path, keys=[new], clients=[WRITER], port=port) as rotated:
                assert rotated.issuer == issuer
                new_token = rotated.token(WRITER)
                assert (
                    status_with(server.url(), new_token) == ACCEPTED
                )  # an unknown key: the set is fetched again
                assert status_with(server.url(), old_token) == 401
                assert status_with(server.url(), new_token) == ACCEPTED


@pytest.mark.parametrize("era", ERAS)
async def test_opaque_tokens_are_introspected_at_the_provider(sqlite_url, tmp_path, log_dir, era):
    resource_server = Client("tasks-server", "tasks-server-secret-0123", "tasks:read")
    with provider(tmp_path, keys=[new_key("k1")], clients=[WRITER, READER, resource_server]) as idp:
        extra = ("--auth", "introspection", "--auth-issuer", idp.issuer, "--auth-audience", OPAQUE_AUDIENCE)
        extra += ("--auth-client-id", resource_server.client_id, "--auth-actor-claim", "client_id")
        launch = tasks_launch(sqlite_url, "--demo")
        launch.env["DOCKYARD_AUTH_CLIENT_SECRET"] = resource_server.client_secret
        with http_server(launch, extra_args=extra, log_dir=log_dir) as server:
            token = idp.token(WRITER, resource=OPAQUE_AUDIENCE)
            assert token.count(".") != 2  # not a JWT: only the provider can say what it means
            async with open_session(server.url(), era=era, headers=bearer(token)) as session:
                await session.call_ok("add_comment", {"task_id": "TASK-2", "body": "introspected"})
                comments = (await session.call_ok("get_task", {"task_id": "TASK-2"})).data["comments"]
            assert [(c["author"], c["body"]) for c in comments] == [("writer", "introspected")]
            reader = idp.token(READER, resource=OPAQUE_AUDIENCE)
            async with open_session(server.url(), era=era, headers=bearer(reader)) as session:
                refused = await session.call_error("add_comment", {"task_id": "TASK-2", "body": "no"})
            assert "tasks:write" in refused
            assert status_with(server.url(), idp.token(WRITER)) == 401  # a JWT for another audience
            assert status_with(server.url(), token + "x") == 401  # a token the provider never issued


def test_sign_in_without_an_issuer_stops_start_up_clearly(sqlite_url):
    result = tasks_launch(sqlite_url).run("--transport", "http", "--port", "0", "--auth", "jwt")
    assert result.returncode == 2 and "--auth-issuer" in result.stderr and "Traceback" not in result.stderr


def test_an_unreachable_issuer_or_a_second_way_in_stops_start_up_clearly(sqlite_url, tmp_path):
    http = ("--transport", "http", "--port", "0", "--auth", "jwt")
    with socket.socket() as closed:  # a port nothing listens on
        closed.bind(("127.0.0.1", 0))
        nowhere = f"http://127.0.0.1:{closed.getsockname()[1]}"
    result = tasks_launch(sqlite_url).run(*http, "--auth-issuer", nowhere)
    assert result.returncode == 2 and "cannot find the jwks_uri" in result.stderr
    assert "--auth-jwks-uri" in result.stderr and "Traceback" not in result.stderr

    actors = tmp_path / "actors.json"
    actors.write_text(json.dumps({"alice-token-0123456789": "alice"}))
    both = tasks_launch(sqlite_url).run(*http, "--auth-issuer", nowhere, "--actors", str(actors))
    assert (
        both.returncode == 2 and "--actors and --auth jwt" in both.stderr and "Traceback" not in both.stderr
    )

    skew = tasks_launch(sqlite_url).run(*http, "--auth-issuer", nowhere, "--auth-clock-skew", "3600")
    assert skew.returncode == 2 and "at most 300" in skew.stderr
