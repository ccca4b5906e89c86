"""Sign-in with the team's identity provider (``--auth jwt``, ``--auth introspection``): OAuth 2.1 for HTTP.

A token is a JWT the identity provider signed: its signature is checked against the issuer's published keys
(JWKS, found through the issuer's discovery document unless ``--auth-jwks-uri`` names it), and its issuer,
audience, expiry and scopes by FastMCP's :class:`~fastmcp.server.auth.providers.jwt.JWTVerifier`. On top of
that, :class:`SignInVerifier` refuses a token with no expiry or one issued (``iat``) or valid from (``nbf``)
more than ``--auth-clock-skew`` seconds in the future, and gives each token an actor: the claim
``--auth-actor-claim`` names (``sub`` by default), kept only if ``--auth-allowed-actor`` lists it (when given).
The actor is the token's ``client_id`` to the tools, as the tasks server's ``--actors`` tokens are.

The server publishes OAuth protected-resource metadata (RFC 9728) naming the issuer, at
``/.well-known/oauth-protected-resource<path>``, and answers a request without a valid token with 401 and a
``WWW-Authenticate: Bearer ... resource_metadata="..."`` header (FastMCP's :class:`RemoteAuthProvider`), so
an MCP host finds where to sign in. ``/health`` stays open.

Key rotation: keys are cached; a token signed by a key the server does not know makes it fetch the key set
again (at most every ``--auth-jwks-refresh`` seconds), and the fetched set replaces the cached one, so a key
the provider has rotated out is refused from then on (FastMCP keeps a cached set for an hour at most).

:class:`~dockyard_shared.signin_tokens.ScopeGate` maps scopes to tools: a read scope serves the read-only
tools, a write scope the rest. This module imports neither FastMCP nor the MCP SDK (the runner imports it).
"""

from __future__ import annotations

import argparse
import json
import os
import urllib.request
import weakref
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from .flags import StartupRefused

if TYPE_CHECKING:
    from fastmcp import FastMCP

__all__ = [
    "add_sign_in_arguments",
    "advertise_scopes",
    "protect",
    "sign_in_note",
    "signs_in",
]

MAX_CLOCK_SKEW = 300.0
CLIENT_SECRET_ENV = "DOCKYARD_AUTH_CLIENT_SECRET"


def add_sign_in_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("sign-in over HTTP (common to every Dockyard server)")
    group.add_argument(
        "--auth",
        choices=["token", "jwt", "introspection"],
        default="token",
        help="token: the static bearer token of --auth-token (if set); jwt: OAuth access tokens (JWTs) "
        "from the identity provider --auth-issuer; introspection: any access token, asked about at the "
        "provider's introspection endpoint (RFC 7662)",
    )
    group.add_argument(
        "--auth-issuer", metavar="URL", help="--auth jwt|introspection: the identity provider's issuer URL"
    )
    group.add_argument(
        "--auth-jwks-uri",
        metavar="URL",
        help="--auth jwt: where the issuer publishes its signing keys (default: from the issuer's "
        "/.well-known/openid-configuration or oauth-authorization-server document)",
    )
    group.add_argument(
        "--auth-audience",
        metavar="AUD",
        help="--auth jwt|introspection: the audience a token must name (default: this server's resource URL, "
        "--auth-public-url plus --path)",
    )
    group.add_argument(
        "--auth-public-url",
        metavar="URL",
        help="--auth jwt|introspection: this server's base URL as hosts reach it, e.g. https://tasks.example.com "
        "(default: http://HOST:PORT); published in the protected-resource metadata",
    )
    group.add_argument(
        "--auth-required-scopes",
        default="",
        metavar="A,B",
        help="--auth jwt|introspection: scopes every token must carry (comma or space separated)",
    )
    group.add_argument(
        "--auth-algorithm", default="RS256", metavar="ALG", help="--auth jwt: the signing algorithm"
    )
    group.add_argument(
        "--auth-clock-skew",
        type=_skew,
        default=60.0,
        metavar="SECONDS",
        help=f"--auth jwt|introspection: how far in the future a token's iat/nbf may be (at most {MAX_CLOCK_SKEW:.0f}); "
        "an expired token is always refused",
    )
    group.add_argument(
        "--auth-jwks-refresh",
        type=_seconds,
        default=30.0,
        metavar="SECONDS",
        help="--auth jwt: fewest seconds between fetches of the key set when a token names an unknown key",
    )
    group.add_argument(
        "--auth-introspection-url",
        metavar="URL",
        help="--auth introspection: the endpoint (default: from the issuer's discovery document)",
    )
    group.add_argument(
        "--auth-client-id",
        metavar="ID",
        help="--auth introspection: this server's client id at the provider",
    )
    group.add_argument(
        "--auth-client-secret-env",
        default=CLIENT_SECRET_ENV,
        metavar="NAME",
        help="--auth introspection: the environment variable holding this server's client secret",
    )
    group.add_argument(
        "--auth-actor-claim",
        default="sub",
        metavar="CLAIM",
        help="--auth jwt|introspection: the claim that names who calls (sub, email, preferred_username...)",
    )
    group.add_argument(
        "--auth-allowed-actor",
        action="append",
        default=[],
        metavar="ACTOR",
        help="--auth jwt|introspection: accept only tokens whose actor claim is this (repeatable; default: any)",
    )


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not 0 <= value <= 3600:
        raise argparse.ArgumentTypeError("give a number of seconds from 0 to 3600")
    return value


def _skew(text: str) -> float:
    value = _seconds(text)
    if value > MAX_CLOCK_SKEW:
        raise argparse.ArgumentTypeError(f"at most {MAX_CLOCK_SKEW:.0f} seconds")
    return value


def signs_in(args: argparse.Namespace) -> bool:
    """Whether ``args`` ask for sign-in with an identity provider (callers then need a token)."""
    return getattr(args, "auth", "token") in ("jwt", "introspection")


def _scopes(text: str) -> list[str]:
    return [part for part in text.replace(",", " ").split() if part]


def discover(issuer: str, field: str, flag: str, *, timeout: float = 10.0) -> str:
    """``field`` of ``issuer``'s discovery document (OpenID Connect, then RFC 8414)."""
    base = issuer.rstrip("/")
    tried = []
    for document in ("openid-configuration", "oauth-authorization-server"):
        url = f"{base}/.well-known/{document}"
        tried.append(url)
        try:
            with urllib.request.urlopen(url, timeout=timeout) as response:
                metadata = json.loads(response.read(1_000_000))
        except (OSError, ValueError):
            continue
        if isinstance(metadata, dict) and isinstance(metadata.get(field), str):
            if metadata.get("issuer") not in (None, issuer):
                raise StartupRefused(
                    f"{url} names the issuer {metadata.get('issuer')!r}, not {issuer!r}: check --auth-issuer "
                    "(it must be exactly the provider's issuer, trailing slash included)."
                )
            return metadata[field]
    raise StartupRefused(
        f"cannot find the {field} of {issuer} at {' or '.join(tried)}. Check "
        f"--auth-issuer and that the provider is reachable, or give it with {flag}."
    )


def verifier_from(args: argparse.Namespace, *, resource_url: str) -> Any:
    """The token verifier ``args`` describe (``--auth jwt`` or ``--auth introspection``)."""
    if not args.auth_issuer:
        raise StartupRefused(
            f"--auth {args.auth} needs --auth-issuer URL: the identity provider that issues the tokens."
        )
    if args.auth == "introspection":
        return _introspection(args, resource_url=resource_url)
    from .signin_tokens import SignInVerifier

    try:
        return SignInVerifier(
            jwks_uri=args.auth_jwks_uri or discover(args.auth_issuer, "jwks_uri", "--auth-jwks-uri"),
            issuer=args.auth_issuer,
            audience=args.auth_audience or resource_url,
            algorithm=args.auth_algorithm,
            required_scopes=_scopes(args.auth_required_scopes) or None,
            jwks_refresh_interval=args.auth_jwks_refresh,
            clock_skew=args.auth_clock_skew,
            actor_claim=args.auth_actor_claim,
            allowed_actors=args.auth_allowed_actor,
        )
    except ValueError as error:  # FastMCP's refusal of an algorithm it does not support
        raise StartupRefused(f"--auth jwt: {error}") from None


def _introspection(args: argparse.Namespace, *, resource_url: str) -> Any:
    secret = os.environ.get(args.auth_client_secret_env)
    if not args.auth_client_id or not secret:
        raise StartupRefused(
            f"--auth introspection needs this server's own client at the provider: --auth-client-id ID and "
            f"its secret in ${args.auth_client_secret_env} (--auth-client-secret-env names another variable)."
        )
    from .signin_tokens import IntrospectedVerifier

    return IntrospectedVerifier(
        introspection_url=args.auth_introspection_url
        or discover(args.auth_issuer, "introspection_endpoint", "--auth-introspection-url"),
        client_id=args.auth_client_id,
        client_secret=secret,
        audience=args.auth_audience or resource_url,
        required_scopes=_scopes(args.auth_required_scopes) or None,
        clock_skew=args.auth_clock_skew,
        actor_claim=args.auth_actor_claim,
        allowed_actors=args.auth_allowed_actor,
    )


_ADVERTISED: weakref.WeakKeyDictionary[Any, tuple[str, ...]] = weakref.WeakKeyDictionary()


def advertise_scopes(server: FastMCP, scopes: Sequence[str]) -> None:
    """The scopes ``server`` understands (e.g. tasks:read, tasks:write): with ``--auth jwt`` they are
    published as ``scopes_supported`` and asked for in the 401 challenge, so a host requests them."""
    _ADVERTISED[server] = tuple(scopes)


def sign_in_note(args: argparse.Namespace) -> str:
    """What the "serving" log line adds about sign-in."""
    return f" (sign-in with {args.auth_issuer} required)" if signs_in(args) else ""


def protect(
    servers: Mapping[str, FastMCP],
    args: argparse.Namespace,
    *,
    host: str,
    port: int,
    path: str,
    prefixed: bool,
) -> None:
    """Make each of ``servers`` require a signed-in caller when ``args`` ask for ``--auth jwt``; else
    leave them be. ``port`` is the one bound (``--port 0`` picks one)."""
    if not signs_in(args):
        return
    if prefixed:
        raise StartupRefused(f"--auth {args.auth} signs callers in to one server: run each on its own port.")
    for server in servers.values():
        _protect(server, args, host=host, port=port, path=path)


def _protect(server: FastMCP, args: argparse.Namespace, *, host: str, port: int, path: str) -> None:
    from fastmcp.server.auth import RemoteAuthProvider
    from pydantic import AnyHttpUrl

    if server.auth is not None:
        raise StartupRefused(
            f"--auth {args.auth} and the server's own tokens (e.g. dockyard-tasks --actors) both set who may "
            "call: use one."
        )
    if getattr(args, "auth_token", None):
        raise StartupRefused(f"--auth {args.auth} and --auth-token both set the bearer token: use one.")
    public = (args.auth_public_url or f"http://{host}:{port}").rstrip("/")
    verifier = verifier_from(args, resource_url=public + path)
    scopes = sorted({*_scopes(args.auth_required_scopes), *_ADVERTISED.get(server, ())})
    server.auth = RemoteAuthProvider(
        token_verifier=verifier,
        authorization_servers=[AnyHttpUrl(args.auth_issuer)],
        base_url=public,
        resource_name=server.name,
        scopes_supported=scopes or None,
        challenge_scopes=scopes or None,
    )
