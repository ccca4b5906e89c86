#!/usr/bin/env bash
# Installs the third-party clients the interop tests drive (the TypeScript SDK, from the committed lock)
# and warms npx's cache for the MCP Inspector CLI and the conformance suite (both need Node 22, which
# npx fetches). Idempotent; needs npm.
set -euo pipefail
cd "$(dirname "$0")/node"
npm ci --no-audit --no-fund --loglevel=error
npx -y -p node@22 -p @modelcontextprotocol/inspector@2.12.0 -- mcp-inspector --help > /dev/null 2>&1 || true
