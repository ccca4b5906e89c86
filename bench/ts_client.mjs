// Drives two MCP servers over stdio with the official TypeScript SDK client — the SDK inside Claude Desktop,
// VS Code and Cursor — calling them in the same ABBA order as bench/_common.py, and prints the timings.
//
//   node bench/ts_client.mjs SPEC.json      (bench/_common.py writes the spec and reads the output)
//
// SPEC: {"sdk": path of the SDK's dist/esm folder, "servers": {"ours": [command...], "peer": [command...]},
//        "warmup": 2, "cases": [{"name", "ours": [tool, args], "peer": [tool, args], "repeat", "timeout",
//        "touch": a file whose time is moved before each call, or null}]}
// Output (stdout, one JSON object): {"cases": {name: {"ours": {...}, "peer": {...}}}, "memory": {...}} where
// each side has times (seconds), cpu (seconds of server CPU, its reaped children included), bytes, is_error,
// or error.
import { readFileSync, utimesSync } from "node:fs";
import { pathToFileURL } from "node:url";

const spec = JSON.parse(readFileSync(process.argv[2], "utf8"));
const { Client } = await import(pathToFileURL(`${spec.sdk}/client/index.js`));
const { StdioClientTransport } = await import(pathToFileURL(`${spec.sdk}/client/stdio.js`));

const CLOCK_TICKS = 100; // USER_HZ on Linux

function cpuSeconds(pid) {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return fields.slice(11, 15).reduce((sum, value) => sum + Number(value), 0) / CLOCK_TICKS;
}

function peakMegabytes(pid) {
  try {
    const line = readFileSync(`/proc/${pid}/status`, "utf8").split("\n").find((l) => l.startsWith("VmHWM:"));
    return line ? Number(line.split(/\s+/)[1]) / 1024 : null;
  } catch {
    return null; // the server has exited (a peer that crashed on a huge reply, say)
  }
}

async function connect(command) {
  const [executable, ...args] = command;
  const transport = new StdioClientTransport({ command: executable, args, env: process.env, stderr: "ignore" });
  const side = { closed: false };
  transport.onclose = () => {
    side.closed = true;
  };
  const client = new Client({ name: "dockyard-bench", version: "1.0.0" });
  await client.connect(transport);
  await client.listTools(); // the SDK keeps each tool's output schema to validate results against
  return Object.assign(side, { client, transport, pid: transport.pid });
}

const sides = {};
const peaks = {};
for (const [label, command] of Object.entries(spec.servers)) {
  sides[label] = await connect(command);
}

// A reply over the SDK's 10 MiB message limit makes it close the connection (and the server exits): the
// failing case reports the error, and the next case starts a fresh server.
async function reconnectIfClosed(label) {
  if (sides[label].closed) {
    peaks[label] = Math.max(peaks[label] ?? 0, peakMegabytes(sides[label].pid) ?? 0);
    sides[label] = await connect(spec.servers[label]);
  }
}

function failure(error) {
  return { error: `${error.name}: ${String(error.message).slice(0, 80)}` };
}

async function call(label, [tool, args], timeout) {
  globalThis.gc?.(); // as the Python driver does: earlier garbage is collected outside the timing
  const started = performance.now();
  const result = await sides[label].client.callTool({ name: tool, arguments: args }, undefined, {
    timeout: timeout * 1000,
  });
  const elapsed = (performance.now() - started) / 1000;
  return { elapsed, bytes: JSON.stringify(result).length, isError: Boolean(result.isError) };
}

const output = { cases: {}, memory: {} };
for (const testCase of spec.cases) {
  const results = {};
  for (const label of Object.keys(sides)) {
    await reconnectIfClosed(label);
    results[label] = { times: [], cpu: 0 };
    try {
      for (let i = 0; i < (testCase.repeat > 1 ? spec.warmup : 0); i++) {
        await call(label, testCase[label], testCase.timeout);
      }
    } catch (error) {
      results[label] = failure(error);
    }
  }
  for (let repetition = 0; repetition < testCase.repeat; repetition++) {
    const order = repetition % 2 === 0 ? ["ours", "peer"] : ["peer", "ours"];
    for (const label of order) {
      const result = results[label];
      if (result.error) continue;
      if (testCase.touch) {
        const now = new Date();
        utimesSync(testCase.touch, now, now);
      }
      const pid = sides[label].pid;
      try {
        const cpuBefore = cpuSeconds(pid);
        const { elapsed, bytes, isError } = await call(label, testCase[label], testCase.timeout);
        result.cpu += cpuSeconds(pid) - cpuBefore;
        result.times.push(elapsed);
        Object.assign(result, { bytes, is_error: isError });
      } catch (error) {
        results[label] = failure(error);
      }
    }
  }
  output.cases[testCase.name] = results;
}
for (const [label, side] of Object.entries(sides)) {
  output.memory[label] = Math.max(peaks[label] ?? 0, peakMegabytes(side.pid) ?? 0) || null;
  if (!side.closed) await side.client.close();
}
console.log(JSON.stringify(output));
process.exit(0);
