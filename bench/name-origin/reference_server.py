"""The reference name-origin server, rebuilt for the benchmark: its two tools as it had them.

One GET per name to nationalize.io's ``/?name=``, in sequence, a fresh client per name, no timeout, no
error handling, the raw JSON returned. The only change: the base URL comes from ``NATIONALIZE_URL`` so the
benchmark can point it at the loopback fake (the real service would spend real quota and add the
internet's latency to both sides). With ``REFERENCE_SHARED_CLIENT=1`` the loop keeps one client for all
its requests instead: kinder than the original, it shows what the sequential loop costs by itself.
"""

from __future__ import annotations

import os

import httpx
from fastmcp import FastMCP

URL = os.environ.get("NATIONALIZE_URL", "https://api.nationalize.io").rstrip("/") + "/"

SHARED = httpx.AsyncClient(timeout=None) if os.environ.get("REFERENCE_SHARED_CLIENT") == "1" else None

mcp = FastMCP("name-origin-reference")


@mcp.tool()
async def predict_origin(name: str) -> dict:
    """Predict the nationality of a name."""
    if SHARED is not None:
        return (await SHARED.get(URL, params={"name": name})).json()
    async with httpx.AsyncClient(timeout=None) as client:
        response = await client.get(URL, params={"name": name})
        return response.json()


@mcp.tool()
async def batch_predict(names: list[str]) -> list[dict]:
    """Predict the nationality of several names."""
    results = []
    for name in names:
        results.append(await predict_origin(name))
    return results


if __name__ == "__main__":
    mcp.run(show_banner=False)
