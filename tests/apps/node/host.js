// The test host: the ext-apps SDK's own AppBridge (host side of MCP Apps) with a view in a sandboxed
// iframe, as a real host renders it. Tool calls, resource reads and everything else the view asks of the
// host go to Python (functions exposed by the harness), which makes them through an MCP client session.
// esbuild bundles this file with the SDK into one script at test setup (tests/apps/host.py).
import { AppBridge, PostMessageTransport } from "@modelcontextprotocol/ext-apps/app-bridge";

// The Content-Security-Policy a strict host applies to a view whose _meta.ui.csp names no origin: inline
// script and style only, no network at all. Inline event handlers stay allowed ('unsafe-inline'), so an
// escaping bug in a view still executes here and the hostile-text tests catch it.
const CSP =
  "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:; " +
  "font-src data:; media-src data:; connect-src 'none'; frame-src 'none'; base-uri 'none'; form-action 'none'";

function withCsp(html) {
  const meta = `<meta http-equiv="Content-Security-Policy" content="${CSP}">`;
  const head = /<head[^>]*>/i.exec(html);
  if (head) return html.slice(0, head.index + head[0].length) + meta + html.slice(head.index + head[0].length);
  return meta + html;
}

const events = [];
let bridge = null;
let iframe = null;

function record(kind, params) {
  events.push({ kind, params: params ?? null });
}

async function load({ html, toolInput, toolResult, hostContext }) {
  iframe = document.createElement("iframe");
  iframe.id = "view";
  iframe.title = "view";
  // Scripts only: an opaque origin, no same-origin access to this page, no forms, no popups, no top
  // navigation; the view reaches the host only through postMessage, as in every Apps host.
  iframe.setAttribute("sandbox", "allow-scripts");
  iframe.srcdoc = withCsp(html);
  bridge = new AppBridge(
    null,
    { name: "dockyard-test-host", version: "1.0.0" },
    {
      serverTools: {},
      serverResources: {},
      logging: {},
      openLinks: {},
      message: { text: {} },
      updateModelContext: { text: {}, structuredContent: {} },
    },
    { hostContext: hostContext ?? {} },
  );
  bridge.oncalltool = async (params) => {
    record("tools/call", params);
    return await window.dockyardHostCallTool(params);
  };
  bridge.onreadresource = async (params) => {
    record("resources/read", params);
    return await window.dockyardHostReadResource(params);
  };
  bridge.onsizechange = (params) => {
    record("size-changed", params);
    if (params.height != null) iframe.style.height = `${Math.min(Math.max(params.height, 40), 4000)}px`;
  };
  bridge.onopenlink = async (params) => (record("open-link", params), {});
  bridge.onmessage = async (params) => (record("message", params), {});
  bridge.onupdatemodelcontext = async (params) => (record("update-model-context", params), {});
  bridge.onloggingmessage = (params) => record("log", params);
  bridge.onrequestteardown = (params) => record("request-teardown", params);
  const initialized = new Promise((resolve) => {
    bridge.oninitialized = () => {
      record("initialized", bridge.getAppVersion() ?? null);
      resolve();
    };
  });
  document.body.appendChild(iframe);
  // The transport only accepts messages whose source is this frame's window.
  await bridge.connect(new PostMessageTransport(iframe.contentWindow, iframe.contentWindow));
  await initialized;
  if (toolInput) await bridge.sendToolInput({ arguments: toolInput });
  if (toolResult) await bridge.sendToolResult(toolResult);
}

window.dockyardHost = {
  load,
  events,
  sendToolInput: (args) => bridge.sendToolInput({ arguments: args }),
  sendToolResult: (result) => bridge.sendToolResult(result),
  sendToolCancelled: (reason) => bridge.sendToolCancelled({ reason }),
  setHostContext: (context) => bridge.setHostContext(context),
  teardown: async () => {
    const result = await bridge.teardownResource({});
    record("teardown-done", result);
    return result;
  },
};
