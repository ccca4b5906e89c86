"""Behind a load balancer the per-client caps count the client the balancer forwards, not the balancer:
X-Forwarded-For is believed from --trusted-proxy networks only, read right to left, and ignored from
anyone else (who could otherwise name a new address for every session and escape the cap)."""

from __future__ import annotations

import httpx
import pytest

from dockyard_shared.http_forwarded import forwarded_client, parse_networks
from dockyard_shared.http_sessions import LOOPBACK
from tests.harness import INITIALIZE, http_server
from tests.shared.test_sessions_per_client import JSON_AND_SSE, _in_session

INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}
PROXIES = parse_networks(["10.0.0.0/8", "127.0.0.1"])


@pytest.mark.parametrize(
    ("peer", "header", "client"),
    [
        ("10.1.2.3", ["198.51.100.7"], "198.51.100.7"),  # a trusted proxy names the client
        ("198.51.100.9", ["198.51.100.7"], "198.51.100.9"),  # anyone else's header is ignored
        ("10.1.2.3", ["6.6.6.6, 198.51.100.7"], "198.51.100.7"),  # what the client put first is not believed
        ("10.1.2.3", ["198.51.100.7, 10.0.0.5"], "198.51.100.7"),  # a chain of trusted proxies is skipped
        ("10.1.2.3", ["198.51.100.7", "10.0.0.5"], "198.51.100.7"),  # the header given twice
        ("10.1.2.3", ["not an address"], "10.1.2.3"),  # garbled: the proxy counts, not a made-up name
        ("::ffff:10.1.2.3", ["2001:db8::1"], "2001:db8::1"),  # an IPv4-mapped peer is its IPv4 address
        ("10.1.2.3", [], "10.1.2.3"),
    ],
)
def test_the_forwarded_client_is_believed_from_trusted_proxies_only(peer, header, client):
    assert forwarded_client(peer, header, PROXIES) == client


def test_a_bad_trusted_proxy_is_refused_at_start(toy_launch):
    refused = toy_launch.run("--transport", "http", "--trusted-proxy", "10.0.0.0/33")
    assert refused.returncode == 2 and "--trusted-proxy" in refused.stderr and "CIDR" in refused.stderr


def _open_used(client: httpx.Client, url: str, forwarded: str) -> httpx.Response:
    response = client.post(url, json=INITIALIZE, headers={**JSON_AND_SSE, "X-Forwarded-For": forwarded})
    if response.status_code == 200:
        notified = client.post(url, json=INITIALIZED, headers=_in_session(response.headers["mcp-session-id"]))
        assert notified.status_code == 202, notified.text
    return response


@pytest.mark.slow
def test_sessions_are_capped_per_forwarded_client_behind_a_trusted_proxy(toy_launch, log_dir):
    args = ("--max-sessions-per-client", "1", "--trusted-proxy", "127.0.0.0/8")
    with (
        http_server(toy_launch, extra_args=args, log_dir=log_dir) as server,
        httpx.Client(timeout=20) as client,
    ):
        url = server.url()
        assert _open_used(client, url, "198.51.100.7").status_code == 200
        assert _open_used(client, url, "198.51.100.8").status_code == 200  # another person behind the proxy
        refused = _open_used(client, url, "6.6.6.6, 198.51.100.7")
        assert refused.status_code == 429, refused.text
        assert (
            "Too many open sessions from 198.51.100.7: 1 sessions in use"
            in refused.json()["error"]["message"]
        )


@pytest.mark.slow
def test_without_trusted_proxies_the_header_changes_nothing(toy_launch, log_dir):
    args = ("--max-sessions-per-client", "1")
    with (
        http_server(toy_launch, extra_args=args, log_dir=log_dir) as server,
        httpx.Client(timeout=20) as client,
    ):
        url = server.url()
        assert _open_used(client, url, "198.51.100.7").status_code == 200
        refused = _open_used(client, url, "198.51.100.8")
        assert refused.status_code == 429, refused.text
        assert f"Too many open sessions from {LOOPBACK}" in refused.json()["error"]["message"]
