"""Who the client is behind a load balancer: ``X-Forwarded-For``, believed from trusted proxies only.

Behind HAProxy or nginx every request's TCP peer is the balancer, so the per-client caps
(``--max-sessions-per-client``, tasks' ``--max-listen-streams-per-client``) would count the whole team as one
client. :class:`ForwardedClient` replaces the ASGI ``client`` with the address the proxy forwarded, but only
when the peer is one of ``--trusted-proxy`` networks: anyone else could name any address they like in the
header, and so escape every cap. The header is read right to left, skipping trusted proxies, so the first
address a trusted proxy did not add itself (the one it saw connect) is the client; whatever a client put in
the header before that is ignored. Without trusted proxies (the default) nothing changes: the peer counts.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence

from starlette.types import ASGIApp, Receive, Scope, Send

__all__ = ["ForwardedClient", "forwarded_client", "parse_networks"]

Network = ipaddress.IPv4Network | ipaddress.IPv6Network
_HEADER = b"x-forwarded-for"


def parse_networks(texts: Sequence[str]) -> tuple[Network, ...]:
    """``10.0.0.0/8``, ``192.0.2.7`` or ``::1`` each as a network; ValueError naming a bad one."""
    networks = []
    for text in texts:
        try:
            networks.append(ipaddress.ip_network(text.strip(), strict=False))
        except ValueError:
            raise ValueError(f"not an address or network (CIDR): {text!r}") from None
    return tuple(networks)


def _address(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    text = text.strip().strip("[]")
    try:
        address = ipaddress.ip_address(text.partition("%")[0])
    except ValueError:
        return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


def _trusted(address: ipaddress.IPv4Address | ipaddress.IPv6Address, networks: Sequence[Network]) -> bool:
    return any(address.version == network.version and address in network for network in networks)


def forwarded_client(
    peer: str | None, forwarded_for: Sequence[str], networks: Sequence[Network]
) -> str | None:
    """The client's address: ``peer`` unless it is a trusted proxy, else the rightmost address of the
    ``X-Forwarded-For`` values (each a comma-separated list) that is not itself a trusted proxy."""
    address = _address(peer) if peer else None
    if address is None or not _trusted(address, networks):
        return peer
    hops = [hop for value in forwarded_for for hop in value.split(",")]
    for hop in reversed(hops):
        found = _address(hop)
        if found is None:
            return peer  # a garbled header: count the proxy itself, never a made-up name
        if not _trusted(found, networks):
            return str(found)
    return peer if not hops else str(_address(hops[0]))


class ForwardedClient:
    """ASGI middleware: ``scope["client"]`` becomes the forwarded client when the peer is a trusted proxy."""

    def __init__(self, app: ASGIApp, *, networks: Sequence[Network]) -> None:
        self.app = app
        self.networks = tuple(networks)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and self.networks:
            peer = scope.get("client")
            values = [v.decode("latin-1") for k, v in scope.get("headers") or () if k.lower() == _HEADER]
            if peer and values:
                client = forwarded_client(peer[0], values, self.networks)
                if client != peer[0]:
                    scope = {**scope, "client": (client, 0)}
        await self.app(scope, receive, send)
