"""A loopback fake of the nationalize.io API: a real HTTP server speaking its documented contract.

As on api.nationalize.io:

* ``GET /?name=NAME`` answers ``{"count": N, "name": NAME, "country": [{"country_id", "probability"}]}``;
  ``GET /?name[]=A&name[]=B`` (at most 10) answers a list of those, in input order; a name nobody has
  is ``count: 0, country: []``; the name is echoed exactly as it was asked;
* an ``apikey`` query parameter selects a subscription: an unknown key is 401, an inactive one 402;
* quotas per key, or per client IP without one: every name in a batch counts, a batch larger than the
  remaining quota fails as a whole with 429 (nothing is counted), and every answer carries
  ``X-Rate-Limit-Limit``, ``X-Rate-Limit-Remaining`` and ``X-Rate-Limit-Reset`` (seconds until reset);
* errors are JSON ``{"error": "..."}``: 401 invalid key, 402 subscription not active, 422 missing or
  invalid name, 429 request limit reached.

The same fake serves genderize.io and agify.io (:class:`RunningFake` with ``api="genderize"`` or
``"agify"``, one port each, as they are three hosts): ``{"count", "name", "gender": "male"|"female"|null,
"probability"}`` and ``{"count", "name", "age": int|null}``, batched the same way; ``country_id`` (ISO 3166-1
alpha-2, upper case) localises the answer, which then echoes ``country_id`` (a malformed one is 422). The
three share one key and one quota per key (or IP), as Demografix's one key for all three APIs does: a
name asked of any of them counts against the same window.

Predictions are made up but deterministic: the same name (case-insensitive) always gets the same answer,
and about one name in ten is unknown.

Faults are injected per request (:meth:`FakeNationalize.inject`, consumed in order) or for every request
(:attr:`FakeNationalize.persistent`): added latency, a hang past the client's timeout, 5xx answers,
malformed JSON, a wrong content type, an oversized body, an echoed name that differs from the one asked,
a connection reset, a body trickled slowly, a redirect (its ``Location`` repeating the query, key and all),
a body of the test's choosing (``body``), and quota headers of the test's choosing (``headers``: the answer
is otherwise normal and counts quota; with ``status`` they go on the error). A faulted request counts no
quota, except ``headers``. Faults may also be tied to names (:attr:`FakeNationalize.faulty`): a request
asking one of them gets its fault. Every request is recorded.

``echo_key`` makes error texts quote the key (a careless upstream), in the form ``echo_as`` says: as sent
(``raw``), as it arrived in the query string (``wire``), or re-encoded with ``quote_plus`` or with
lower-case percent escapes.
"""

from __future__ import annotations

import hashlib
import json
import re
import select
import socket
import struct
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal
from urllib.parse import parse_qs, quote, quote_plus, urlparse

from tests.name_origin.fake_traits import age_prediction, gender_prediction

API_KEY = "nat_" + "S3cr3tK3y" * 4  # what tests hand the server through the environment
FREE_LIMIT = 100  # names a day per IP without a key
KEY_LIMIT = 10_000
BATCH_MAX = 10

COUNTRY_POOL = [
    "US",
    "GB",
    "IE",
    "AU",
    "CA",
    "NZ",
    "DE",
    "AT",
    "CH",
    "FR",
    "BE",
    "NL",
    "IT",
    "ES",
    "PT",
    "BR",
    "MX",
    "AR",
    "CO",
    "PL",
    "CZ",
    "SK",
    "HU",
    "RO",
    "UA",
    "RU",
    "SE",
    "NO",
    "DK",
    "FI",
    "GR",
    "TR",
    "IL",
    "IN",
    "PK",
    "BD",
    "CN",
    "JP",
    "KR",
    "VN",
    "PH",
    "ID",
    "NG",
    "GH",
    "KE",
    "ZA",
    "EG",
    "MA",
    "XK",
]

STATUS_TEXT = {
    401: "Invalid API key",
    402: "Subscription is not active",
    422: "Invalid 'name' parameter",
    429: "Request limit reached",
}

FaultKind = Literal[
    "status",
    "hang",
    "malformed",
    "content_type",
    "oversized",
    "mismatch",
    "reset",
    "slow_body",
    "redirect",
    "body",
    "headers",
]
EchoForm = Literal["raw", "wire", "quote_plus", "lower_hex"]


@dataclass(frozen=True)
class Fault:
    """What goes wrong with one request. ``seconds``: how long a hang or a slow body lasts."""

    kind: FaultKind
    status: int = 503
    seconds: float = 0.0
    body: bytes = b""  # kind "body": answered with status 200 and a JSON content type
    headers: dict[str, str] | None = None  # kind "headers" (or "status"): quota headers to send instead


@dataclass(frozen=True)
class Recorded:
    names: tuple[str, ...]
    batch: bool
    apikey: str | None
    query: str
    headers: dict[str, str]
    fault: Fault | None
    api: str = "nationalize"
    country_id: str | None = None


Api = Literal["nationalize", "genderize", "agify"]
_COUNTRY_PARAM = re.compile(r"^[A-Z]{2}$")


def answer_of(api: str, name: str, country_id: str | None = None) -> dict[str, Any]:
    if api == "genderize":
        return gender_prediction(name, country_id)
    if api == "agify":
        return age_prediction(name, country_id)
    return prediction(name)


def prediction(name: str) -> dict[str, Any]:
    """The fake's deterministic answer for ``name`` (keys in the upstream's order)."""
    digest = hashlib.sha256(name.casefold().encode()).digest()
    if digest[0] % 10 == 0:
        return {"count": 0, "name": name, "country": []}
    count = max(1, int(10 ** (digest[1] / 255 * 5.5)))
    picks: list[str] = []
    for byte in digest[3:]:
        code = COUNTRY_POOL[byte % len(COUNTRY_POOL)]
        if code not in picks:
            picks.append(code)
        if len(picks) == 1 + digest[2] % 5:
            break
    weights = [1 + digest[10 + i] for i in range(len(picks))]
    share = 0.3 + digest[20] / 255 * 0.65  # the top few countries never cover every bearer
    probabilities = sorted((round(w / sum(weights) * share, 4) for w in weights), reverse=True)
    return {
        "count": count,
        "name": name,
        "country": [{"country_id": c, "probability": p} for c, p in zip(picks, probabilities, strict=True)],
    }


@dataclass
class Quota:
    limit: int
    used: int = 0
    window_end: float = 0.0


@dataclass
class FakeNationalize:
    keys: dict[str, int] = field(default_factory=lambda: {API_KEY: KEY_LIMIT})  # key -> daily limit
    inactive_keys: set[str] = field(default_factory=set)
    free_limit: int = FREE_LIMIT
    window_seconds: int = 86_400
    latency: float = 0.0  # added to every answer
    # A stalled upstream: while this event is not set, every answer waits for it (or for the fake to stop),
    # however long that is. Requests are recorded when they arrive, so a test sees what is waiting.
    stall: threading.Event | None = None
    waiting: int = 0  # answers being held by the stall now
    abandoned: int = 0  # held answers whose client hung up before the stall ended
    echo_key: bool = False  # error texts quote the apikey asked with (a careless upstream)
    echo_as: EchoForm = "raw"
    faulty: dict[str, Fault] = field(default_factory=dict)  # a request asking one of these names: its fault
    persistent: Fault | None = None
    requests: list[Recorded] = field(default_factory=list)
    quotas: dict[str, Quota] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._faults: list[Fault] = []
        self._lock = threading.Lock()
        self.stopping = threading.Event()

    def inject(self, *faults: Fault) -> None:
        """Faults for the next requests, one each, in order."""
        with self._lock:
            self._faults.extend(faults)

    def next_fault(self, names: tuple[str, ...] = ()) -> Fault | None:
        with self._lock:
            for name in names:
                if name in self.faulty:
                    return self.faulty[name]
            if self._faults:
                return self._faults.pop(0)
        return self.persistent

    def clear_faults(self) -> None:
        with self._lock:
            self._faults.clear()
        self.persistent = None

    @property
    def request_count(self) -> int:
        return len(self.requests)

    def names_asked(self) -> list[str]:
        return [name for request in self.requests for name in request.names]

    def quota_for(self, identity: str, limit: int) -> Quota:
        with self._lock:
            quota = self.quotas.get(identity)
            now = time.time()
            if quota is None or now >= quota.window_end:
                quota = self.quotas[identity] = Quota(limit=limit, window_end=now + self.window_seconds)
            return quota

    def spend(self, identity: str, limit: int, names: int) -> tuple[bool, Quota]:
        """Count ``names`` against the quota unless they do not all fit (then nothing is counted)."""
        quota = self.quota_for(identity, limit)
        with self._lock:
            if quota.used + names > quota.limit:
                return False, quota
            quota.used += names
            return True, quota

    def exhaust(self, identity: str = "127.0.0.1", *, limit: int | None = None) -> None:
        """Spend the whole quota of ``identity`` (an IP or a key)."""
        quota = self.quota_for(identity, limit or self.keys.get(identity, self.free_limit))
        quota.used = quota.limit

    def reset_quotas(self) -> None:
        with self._lock:
            self.quotas.clear()


class _Handler(BaseHTTPRequestHandler):
    fake: FakeNationalize
    api: Api = "nationalize"
    protocol_version = "HTTP/1.1"  # keep-alive, as the real service
    # Headers and body go out in two writes; with Nagle's algorithm the second waits for the client's
    # delayed ACK (40 ms on Linux) on every kept-alive connection, which no real server adds.
    disable_nagle_algorithm = True

    def log_message(self, *args: Any) -> None:  # keep test output clean
        pass

    def _send(
        self,
        code: int,
        body: bytes,
        *,
        content_type: str = "application/json; charset=utf-8",
        headers: dict[str, str] | None = None,
    ) -> None:
        self.send_response(code)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(body)

    def _json(self, code: int, value: Any, headers: dict[str, str] | None = None) -> None:
        self._send(code, json.dumps(value).encode(), headers=headers)

    def _error(self, code: int, text: str, apikey: str | None, headers: dict[str, str] | None = None) -> None:
        if self.fake.echo_key and apikey:
            text = f"{text} (apikey={self._echoed(apikey)})"
        self._json(code, {"error": text}, headers)

    def _echoed(self, apikey: str) -> str:
        form = self.fake.echo_as
        if form == "wire":  # exactly as the client encoded it in the query string
            pairs = (part.partition("=") for part in urlparse(self.path).query.split("&"))
            return next((value for key, _, value in pairs if key == "apikey"), "")
        if form == "quote_plus":
            return quote_plus(apikey)
        if form == "lower_hex":
            return re.sub(r"%[0-9A-F]{2}", lambda match: match.group(0).lower(), quote(apikey, safe=""))
        return apikey

    def _quota_headers(self, quota: Quota) -> dict[str, str]:
        return {
            "X-Rate-Limit-Limit": str(quota.limit),
            "X-Rate-Limit-Remaining": str(max(0, quota.limit - quota.used)),
            "X-Rate-Limit-Reset": str(max(0, int(quota.window_end - time.time()))),
        }

    def do_GET(self) -> None:
        fake = self.fake
        parsed = urlparse(self.path)
        query = parse_qs(parsed.query, keep_blank_values=True)
        batch = "name[]" in query
        names = tuple(query.get("name[]", []) if batch else query.get("name", [])[:1])
        apikey = query.get("apikey", [None])[0]
        country_id = query.get("country_id", [None])[0] if self.api != "nationalize" else None
        fault = fake.next_fault(names)
        with fake._lock:
            fake.requests.append(
                Recorded(names, batch, apikey, parsed.query, dict(self.headers), fault, self.api, country_id)
            )
        if fake.latency:
            fake.stopping.wait(fake.latency)
        if fake.stall is not None and not fake.stall.is_set() and self._stalled_until_released():
            return
        if fault is not None and fault.kind != "headers":
            self._faulted(fault, names, batch, apikey)
            return
        if parsed.path != "/":
            self._error(404, "Not found", apikey)
            return
        if apikey is not None and apikey not in fake.keys:
            self._error(401, "Invalid API key", apikey)
            return
        if apikey is not None and apikey in fake.inactive_keys:
            self._error(402, "Subscription is not active", apikey)
            return
        if not names:
            self._error(422, "Missing 'name' parameter", apikey)
            return
        if batch and len(names) > BATCH_MAX:
            self._error(422, f"Invalid 'name[]' parameter: at most {BATCH_MAX} names", apikey)
            return
        if any(not name.strip() for name in names):
            self._error(422, "Invalid 'name' parameter", apikey)
            return
        if country_id is not None and not _COUNTRY_PARAM.match(country_id):
            self._error(422, "Invalid 'country_id' parameter", apikey)
            return
        identity, limit = (apikey, fake.keys[apikey]) if apikey else (self.client_address[0], fake.free_limit)
        spent, quota = fake.spend(identity, limit, len(names))
        if not spent:
            self._error(429, "Request limit reached", apikey, self._quota_headers(quota))
            return
        answers = [answer_of(self.api, name, country_id) for name in names]
        headers = (
            fault.headers if fault is not None and fault.headers is not None else self._quota_headers(quota)
        )
        self._json(200, answers if batch else answers[0], headers)

    def _stalled_until_released(self) -> bool:
        """Hold this answer while ``fake.stall`` is not set; True when the client hung up meanwhile (counted
        in ``fake.abandoned``: a cancelled caller closes its connection)."""
        fake = self.fake
        with fake._lock:
            fake.waiting += 1
        try:
            while fake.stall is not None and not fake.stall.wait(0.02) and not fake.stopping.is_set():
                readable, _, _ = select.select([self.connection], [], [], 0)
                if readable and not self.connection.recv(1, socket.MSG_PEEK):
                    with fake._lock:
                        fake.abandoned += 1
                    self.close_connection = True
                    return True
            return False
        finally:
            with fake._lock:
                fake.waiting -= 1

    def _faulted(self, fault: Fault, names: tuple[str, ...], batch: bool, apikey: str | None) -> None:
        """Answer as ``fault`` says instead of as the contract does."""
        fake = self.fake
        answers = [answer_of(self.api, name) for name in names] or [answer_of(self.api, "x")]
        good = json.dumps(answers if batch else answers[0]).encode()
        if fault.kind == "status":
            if fault.status in (502, 504):
                self._send(fault.status, b"<html><body>Bad gateway</body></html>", content_type="text/html")
            else:
                text = STATUS_TEXT.get(fault.status, "Service unavailable")
                self._error(fault.status, text, apikey, fault.headers)
        elif fault.kind == "redirect":  # e.g. a proxy sending the client elsewhere, query (and key) kept
            self.send_response(302)
            self.send_header(
                "Location",
                f"http://{self.headers.get('Host', '127.0.0.1')}/moved?{urlparse(self.path).query}",
            )
            self.send_header("Content-Length", "0")
            self.end_headers()
        elif fault.kind == "body":
            self._send(200, fault.body)
        elif fault.kind == "hang":
            fake.stopping.wait(fault.seconds)
            self.close_connection = True
        elif fault.kind == "malformed":
            self._send(200, good[: len(good) // 2])
        elif fault.kind == "content_type":
            self._send(200, b"<html><body>Welcome to our portal</body></html>", content_type="text/html")
        elif fault.kind == "oversized":
            self._send(200, good + b" " * (4 * 1024 * 1024))
        elif fault.kind == "mismatch":
            if batch and len(answers) > 1:
                answers[0], answers[1] = answers[1], answers[0]
            else:
                answers[0] = {**answers[0], "name": answers[0]["name"] + "son"}
            self._send(200, json.dumps(answers if batch else answers[0]).encode())
        elif fault.kind == "reset":
            # SO_LINGER with a zero timeout: close() sends RST, as a crashing proxy would.
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.connection.close()
            self.close_connection = True
        elif fault.kind == "slow_body":
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(good)))
            self.end_headers()
            step = max(fault.seconds / max(1, len(good)), 0.0)
            for i in range(len(good)):
                if fake.stopping.wait(step):
                    break
                try:
                    self.wfile.write(good[i : i + 1])
                    self.wfile.flush()
                except OSError:
                    break


class RunningFake:
    """``with RunningFake(FakeNationalize()) as running: running.url``"""

    def __init__(
        self, fake: FakeNationalize | None = None, *, port: int = 0, api: Api = "nationalize"
    ) -> None:
        self.fake = fake or FakeNationalize()
        handler = type("Handler", (_Handler,), {"fake": self.fake, "api": api})
        self.server = ThreadingHTTPServer(("127.0.0.1", port), handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> RunningFake:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.fake.stopping.set()
        self.server.shutdown()
        self.server.server_close()


class RunningDemografix:
    """nationalize, genderize and agify on three ports over one fake (one key, one quota per key)."""

    def __init__(self, fake: FakeNationalize | None = None) -> None:
        self.fake = fake or FakeNationalize()
        self.servers = {api: RunningFake(self.fake, api=api) for api in ("nationalize", "genderize", "agify")}
        self.url = self.servers["nationalize"].url
        self.genderize_url = self.servers["genderize"].url
        self.agify_url = self.servers["agify"].url

    def __enter__(self) -> RunningDemografix:
        for running in self.servers.values():
            running.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        for running in self.servers.values():
            running.__exit__(*exc)


def main() -> None:
    """Serve the fake for a manual session: ``python -m tests.name_origin.fake_nationalize [PORT [LATENCY]]``."""
    import sys

    port = int(sys.argv[1]) if len(sys.argv) > 1 else 0
    latency = float(sys.argv[2]) if len(sys.argv) > 2 else 0.0
    running = RunningFake(FakeNationalize(latency=latency), port=port)
    print(f"fake nationalize.io on {running.url}", flush=True)
    running.server.serve_forever()


if __name__ == "__main__":
    main()
