"""The reference mcp-server-git, served over Streamable HTTP by its own SDK (its CLI speaks only stdio).

    <git-peer venv>/bin/python bench/load/reference_git_http.py REPO PORT   (PORT 0: the OS picks one)

The same server object its console script runs (``create_server``), handed to the SDK's own
``run_streamable_http_async`` on 127.0.0.1; nothing of the server is changed.
"""

from __future__ import annotations

import asyncio
import logging
import sys
from pathlib import Path

from mcp_server_git.server import create_server


def main() -> None:
    repository, port = Path(sys.argv[1]).resolve(), int(sys.argv[2])
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    server = create_server(repository)
    asyncio.run(server.run_streamable_http_async(host="127.0.0.1", port=port))


if __name__ == "__main__":
    main()
