"""--max-sessions-per-client counts a client, not each address it can take: every loopback address is one
client (a local process can bind 127.0.0.2, 127.0.0.3… at will), an IPv6 address counts by its /64."""

from __future__ import annotations

import httpx
import pytest

from dockyard_shared.http_sessions import LOOPBACK, client_key
from tests.harness import INITIALIZE, http_server

JSON_AND_SSE = {"Accept": "application/json, text/event-stream"}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}


def _in_session(session_id: str) -> dict[str, str]:
    return {**JSON_AND_SSE, "mcp-session-id": session_id, "mcp-protocol-version": "2025-11-25"}


def _initialize(client: httpx.Client, url: str) -> httpx.Response:
    return client.post(url, json=INITIALIZE, headers=JSON_AND_SSE)


def _open_used_session(client: httpx.Client, url: str) -> str:
    response = _initialize(client, url)
    assert response.status_code == 200, response.text
    session_id = response.headers["mcp-session-id"]
    notified = client.post(url, json=INITIALIZED, headers=_in_session(session_id))
    assert notified.status_code == 202, notified.text
    return session_id


def from_address(address: str) -> httpx.Client:
    """A client whose connections leave from ``address`` (the server sees it as the peer)."""
    return httpx.Client(transport=httpx.HTTPTransport(local_address=address), timeout=20)


@pytest.mark.slow
def test_sessions_from_several_loopback_addresses_count_as_one_client(toy_launch, log_dir):
    args = ("--max-sessions-per-client", "2")
    with (
        http_server(toy_launch, extra_args=args, log_dir=log_dir) as server,
        from_address("127.0.0.1") as first,
        from_address("127.0.0.2") as second,
        from_address("127.0.0.3") as third,
    ):
        url = server.url()
        held = [_open_used_session(first, url), _open_used_session(second, url)]
        refused = _initialize(third, url)
        assert refused.status_code == 429, refused.text
        message = refused.json()["error"]["message"]
        assert f"from {LOOPBACK}: 2 sessions in use" in message
        assert "every loopback address counts as one client" in message
        # Room is made by closing a session, from any of the loopback addresses.
        assert second.delete(url, headers=_in_session(held[0])).status_code == 200
        assert _open_used_session(third, url)
        assert _initialize(first, url).status_code == 429


@pytest.mark.parametrize(
    ("host", "key"),
    [
        ("127.0.0.1", LOOPBACK),
        ("127.0.0.2", LOOPBACK),
        ("127.255.255.254", LOOPBACK),
        ("::1", LOOPBACK),
        ("::ffff:127.0.0.9", LOOPBACK),
        ("192.0.2.7", "192.0.2.7"),
        ("::ffff:192.0.2.7", "192.0.2.7"),
        ("2001:db8:1:2:aaaa::1", "2001:db8:1:2::/64"),
        ("2001:db8:1:2:ffff::9", "2001:db8:1:2::/64"),
        ("2001:db8:1:3::1", "2001:db8:1:3::/64"),
        ("fe80::1%eth0", "fe80::/64"),
        (None, "unknown"),
        ("not-an-address", "not-an-address"),
    ],
)
def test_the_client_of_an_address(host, key):
    assert client_key(host) == key
