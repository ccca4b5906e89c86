/* Dockyard app bridge: the APP side of MCP Apps (ext-apps protocol 2026-01-26, as the
 * @modelcontextprotocol/ext-apps App class speaks it), no dependencies. Inlined into each view by
 * dockyard_shared.apps.load_view. API (window.dockyardApp):
 *   ready                 Promise of the host context once ui/initialize is answered; rejects at once
 *                         when no host is above the page (opened on its own)
 *   onToolResult(cb)      cb(CallToolResult) for the tool call the view shows (and later pushes);
 *                         called at once with the last one if it already came
 *   onToolInput(cb)       cb(arguments) likewise; onToolCancelled(cb) cb(reason)
 *   onHostContext(cb)     cb(context) now and on every change (theme, displayMode...)
 *   onTeardown(cb)        cb() before the host removes the view (may return a Promise)
 *   callTool(name, args)  Promise of the CallToolResult (isError results resolve too: show their
 *                         text); rejects on a protocol error. Goes through the host to the server.
 *   readResource(uri), openLink(url), sendMessage(text), log(level, data), requestTeardown()
 *   hostContext           the latest host context
 *   textOf(result)        the text blocks of a CallToolResult, joined
 *   esc(s)                s HTML-escaped (& < > " '); null and undefined give ""
 *   h(tag, props, kids)   a DOM element: props.text sets textContent, props.on = {click: fn},
 *                         other props are attributes (on* attributes refused); kids: nodes or strings
 * Rule: render untrusted text (titles, comments, cells, errors) only with textContent, h() or esc();
 * never put a value into innerHTML unescaped. */
(function () {
  "use strict";
  var host = window.parent, seq = 0, pending = {}, last = {}, subs = {};
  var app = { hostContext: {} };

  function send(msg) { host.postMessage(msg, "*"); }
  function request(method, params) {
    return new Promise(function (resolve, reject) {
      var id = ++seq;
      pending[id] = { resolve: resolve, reject: reject };
      send({ jsonrpc: "2.0", id: id, method: method, params: params || {} });
    });
  }
  function notify(method, params) { send({ jsonrpc: "2.0", method: method, params: params || {} }); }
  function emit(kind, value) {
    last[kind] = [value];
    (subs[kind] || []).forEach(function (cb) {
      try { cb(value); } catch (e) { console.error(e); }
    });
  }
  function on(kind) {
    return function (cb) {
      (subs[kind] = subs[kind] || []).push(cb);
      if (last[kind]) cb(last[kind][0]);
    };
  }
  function applyContext(ctx) {
    var root = document.documentElement, vars = ctx.styles && ctx.styles.variables;
    if (ctx.theme === "dark" || ctx.theme === "light") {
      root.setAttribute("data-theme", ctx.theme);
      root.style.colorScheme = ctx.theme;
    }
    for (var k in vars || {}) {
      if (/^--[\w-]+$/.test(k) && typeof vars[k] === "string") root.style.setProperty(k, vars[k]);
    }
  }
  function setContext(partial) {
    for (var k in partial || {}) app.hostContext[k] = partial[k];
    applyContext(app.hostContext);
    emit("context", app.hostContext);
  }

  var handlers = {
    "ui/notifications/tool-input": function (p) { emit("input", p.arguments || {}); },
    "ui/notifications/tool-result": function (p) { emit("result", p); },
    "ui/notifications/tool-cancelled": function (p) { emit("cancelled", p.reason); },
    "ui/notifications/host-context-changed": setContext,
    "ui/resource-teardown": function () {
      return Promise.all((subs.teardown || []).map(function (cb) { return cb(); })).then(function () { return {}; });
    },
    ping: function () { return {}; }
  };

  window.addEventListener("message", function (ev) {
    var m = ev.data;
    if (ev.source !== host || !m || m.jsonrpc !== "2.0") return; // only the host frame speaks to us
    if (m.method === undefined) {
      var p = pending[m.id];
      if (!p) return;
      delete pending[m.id];
      if (m.error) p.reject(new Error(m.error.message || "request failed"));
      else p.resolve(m.result);
      return;
    }
    var fn = handlers[m.method];
    if (m.id === undefined) { if (fn) fn(m.params || {}); return; }
    Promise.resolve()
      .then(function () {
        if (!fn) throw { code: -32601, message: "Method not found: " + m.method };
        return fn(m.params || {});
      })
      .then(function (result) { send({ jsonrpc: "2.0", id: m.id, result: result || {} }); },
        function (e) { send({ jsonrpc: "2.0", id: m.id, error: { code: e.code || -32603, message: String(e.message || e) } }); });
  });

  function watchSize() {
    var w = 0, hgt = 0, queued = false;
    function measure() {
      queued = false;
      var nw = Math.ceil(window.innerWidth), nh = Math.ceil(document.documentElement.getBoundingClientRect().height);
      if (nw !== w || nh !== hgt) { w = nw; hgt = nh; notify("ui/notifications/size-changed", { width: w, height: hgt }); }
    }
    var ro = new ResizeObserver(function () { if (!queued) { queued = true; requestAnimationFrame(measure); } });
    ro.observe(document.documentElement);
    if (document.body) ro.observe(document.body);
  }

  app.ready = request("ui/initialize", {
    appInfo: { name: document.title || "dockyard-view", version: "1" },
    appCapabilities: { availableDisplayModes: ["inline"] },
    protocolVersion: "2026-01-26"
  }).then(function (res) {
    app.hostCapabilities = res.hostCapabilities || {};
    setContext(res.hostContext || {});
    notify("ui/notifications/initialized");
    watchSize();
    return app.hostContext;
  });

  app.onToolResult = on("result");
  app.onToolInput = on("input");
  app.onToolCancelled = on("cancelled");
  app.onHostContext = on("context");
  app.onTeardown = function (cb) { (subs.teardown = subs.teardown || []).push(cb); };
  function after(method, params) { // hosts refuse requests before the handshake is done
    return app.ready.then(function () { return request(method, params); });
  }
  app.callTool = function (name, args) { return after("tools/call", { name: name, arguments: args || {} }); };
  app.readResource = function (uri) { return after("resources/read", { uri: uri }); };
  app.openLink = function (url) { return after("ui/open-link", { url: url }); };
  app.sendMessage = function (text) {
    return after("ui/message", { role: "user", content: [{ type: "text", text: String(text) }] });
  };
  app.log = function (level, data) { notify("notifications/message", { level: level, data: data }); };
  app.requestTeardown = function () { notify("ui/notifications/request-teardown"); };
  app.textOf = function (r) {
    return ((r && r.content) || []).filter(function (c) { return c.type === "text"; })
      .map(function (c) { return c.text; }).join("\n");
  };
  app.esc = function (s) {
    return (s == null ? "" : String(s)).replace(/[&<>"']/g, function (c) {
      return { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" }[c];
    });
  };
  app.h = function (tag, props, kids) {
    var el = document.createElement(tag);
    for (var k in props || {}) {
      var v = props[k];
      if (k === "text") el.textContent = v == null ? "" : String(v);
      else if (k === "on") for (var ev in v) el.addEventListener(ev, v[ev]);
      else if (/^on/i.test(k)) throw new Error("h(): use props.on, not an on* attribute");
      else if (/^\s*javascript:/i.test(String(v))) throw new Error("h(): javascript: URL refused");
      else if (v !== false && v != null) el.setAttribute(k, v === true ? "" : String(v));
    }
    (kids || []).forEach(function (c) {
      if (c != null) el.appendChild(typeof c === "object" ? c : document.createTextNode(String(c)));
    });
    return el;
  };
  window.dockyardApp = app;
})();
