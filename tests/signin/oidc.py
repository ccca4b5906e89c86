"""A real OpenID Connect provider (the npm ``oidc-provider``, tests/signin/node) started on loopback, and
the client-credentials sign-in a host-like client does against it."""

from __future__ import annotations

import base64
import json
import re
import shutil
import subprocess
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
from joserfc import jwt
from joserfc.jwk import RSAKey

NODE_DIR = Path(__file__).parent / "node"

AUDIENCE = "urn:dockyard:tasks"
OTHER_AUDIENCE = "urn:dockyard:elsewhere"
OPAQUE_AUDIENCE = "urn:dockyard:opaque"  # its tokens are opaque: the server introspects them


def missing_provider() -> str | None:
    """Why the provider cannot run here, or None."""
    if shutil.which("node") is None:
        return "Node.js is not installed (tests/interop/prepare.sh installs it and oidc-provider)"
    if not (NODE_DIR / "node_modules" / "oidc-provider").is_dir():
        return "oidc-provider is not installed: run tests/interop/prepare.sh (or npm ci in tests/signin/node)"
    return None


def new_key(kid: str) -> dict[str, Any]:
    key = RSAKey.generate_key(2048, parameters={"kid": kid, "use": "sig", "alg": "RS256"})
    return key.as_dict(private=True)


@dataclass
class Client:
    client_id: str
    client_secret: str
    scope: str
    ttl: int = 600
    email: str | None = None


@dataclass
class Provider:
    issuer: str
    port: int
    process: subprocess.Popen

    def token(self, client: Client, *, scope: str | None = None, resource: str = AUDIENCE) -> str:
        """An access token through the client-credentials grant (RFC 6749 §4.4) for ``resource``."""
        discovery = httpx.get(f"{self.issuer}/.well-known/openid-configuration", timeout=10).json()
        answer = httpx.post(
            discovery["token_endpoint"],
            data={"grant_type": "client_credentials", "scope": scope or client.scope, "resource": resource},
            auth=(client.client_id, client.client_secret),
            timeout=10,
        )
        assert answer.status_code == 200, answer.text
        return answer.json()["access_token"]


PING = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
ACCEPT = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def host_sign_in(mcp_url: str, client: Client) -> str:
    """What an MCP host does (the MCP authorization spec): read the 401's ``resource_metadata``, find the
    authorization server it names and its token endpoint, and ask for a token for that resource with the
    scopes the server advertises (client credentials standing in for the person's sign-in)."""
    challenge = httpx.post(mcp_url, json=PING, headers=ACCEPT, timeout=10)
    assert challenge.status_code == 401
    found = re.search(r'resource_metadata="([^"]+)"', challenge.headers["www-authenticate"])
    assert found, challenge.headers["www-authenticate"]
    metadata = httpx.get(found.group(1), timeout=10).json()
    issuer = metadata["authorization_servers"][0].rstrip("/")
    discovery = httpx.get(f"{issuer}/.well-known/openid-configuration", timeout=10).json()
    answer = httpx.post(
        discovery["token_endpoint"],
        data={
            "grant_type": "client_credentials",
            "scope": " ".join(metadata["scopes_supported"]),
            "resource": metadata["resource"],
        },
        auth=(client.client_id, client.client_secret),
        timeout=10,
    )
    assert answer.status_code == 200, answer.text
    return answer.json()["access_token"]


@contextmanager
def provider(tmp: Path, *, keys: list[dict[str, Any]], clients: list[Client], port: int = 0):
    config = {
        "port": port,
        "keys": keys,
        "clients": [client.__dict__ for client in clients],
        "resources": {
            AUDIENCE: "tasks:read tasks:write",
            OTHER_AUDIENCE: "tasks:read tasks:write",
            OPAQUE_AUDIENCE: "tasks:read tasks:write",
        },
        "opaque_resources": [OPAQUE_AUDIENCE],
        "default_resource": AUDIENCE,
        "loopback_resources": "tasks:read tasks:write",  # a server on loopback named by its own URL
    }
    path = tmp / f"provider-{time.monotonic_ns()}.json"
    path.write_text(json.dumps(config))
    log = (tmp / f"{path.stem}.log").open("wb")
    process = subprocess.Popen(
        ["node", str(NODE_DIR / "provider.js"), str(path)],
        stdout=subprocess.PIPE,
        stderr=log,
        stdin=subprocess.DEVNULL,
        cwd=NODE_DIR,
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()  # blocks until it listens (or exits)
        if not line:
            process.wait(timeout=10)
            raise RuntimeError(f"oidc-provider exited: {(tmp / f'{path.stem}.log').read_text()}")
        started = json.loads(line)
        yield Provider(started["issuer"], started["port"], process)
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()


def claims_of(token: str) -> dict[str, Any]:
    payload = token.split(".")[1]
    return json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))


def signed(claims: dict[str, Any], key: dict[str, Any]) -> str:
    """``claims`` signed with the provider's own private ``key``: for claims its flows never issue."""
    header = {"alg": "RS256", "typ": "at+jwt", "kid": key["kid"]}
    return jwt.encode(header, claims, RSAKey.import_key(key), algorithms=["RS256"])


def unsigned(claims: dict[str, Any], kid: str) -> str:
    """A token with ``alg: none`` and no signature, carrying ``claims`` (RFC 7519 §6)."""

    def part(value: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(value).encode()).rstrip(b"=").decode()

    return f"{part({'alg': 'none', 'typ': 'at+jwt', 'kid': kid})}.{part(claims)}."
