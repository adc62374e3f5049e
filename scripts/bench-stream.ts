/**
 * Streaming benchmark (`npm run bench:stream`): the node's task-event path, every event numbered and stored in
 * SQLite, measured from a client in another process over mTLS SSE.
 *   1. throughput: one SendStreamingMessage stream of 50,000 artifact chunks emitted as fast as possible;
 *   2. latency: 2,000 chunks emitted 1 ms apart; latency = receive time - emit time, per chunk;
 *   3. catch-up: SubscribeToTask with Last-Event-ID 0 on a finished task holding 10,000 stored events.
 * Targets (issue 3): >= 20,000 events/s on one stream; p99 latency <= 2 ms; 10,000-event catch-up < 1 s.
 *   bun scripts/bench-stream.ts [--json FILE]
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { clientTls, readBundle } from "./bench/rpc";
import { freePort, killAllNow, stop, track } from "./bench/proc";

const ROOT = join(import.meta.dir, "..");
const BINARY = join(ROOT, "dist", "a2a-node");
const dir = mkdtempSync(join(tmpdir(), "a2a-bench-stream-"));
process.on("exit", () => {
  killAllNow();
  rmSync(dir, { recursive: true, force: true });
});

function run(args: string[]) {
  const r = Bun.spawnSync([BINARY, ...args], { stdout: "pipe", stderr: "pipe" });
  if (r.exitCode !== 0) throw new Error(`a2a-node ${args.join(" ")}: ${r.stderr}`);
}

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
};

async function client(cfg: Record<string, unknown>) {
  const p = track(
    Bun.spawn([process.execPath, join(import.meta.dir, "bench", "stream-client.ts"), JSON.stringify(cfg)], {
      stdout: "pipe",
      stderr: "inherit",
    }),
  );
  const out = await new Response(p.stdout).text();
  if ((await p.exited) !== 0) throw new Error("stream client failed");
  return JSON.parse(out) as {
    events: number;
    chunks: number;
    ms: number;
    eventsPerSecond: number;
    latenciesMs: number[];
    lastId: string;
    final: string;
  };
}

const home = join(dir, "home");
run(["--home", home, "init-pki", "--name", "bench-stream"]);
const bundle = join(dir, "client.json");
run(["--home", home, "pki", "issue", "bench-client", "--out", bundle]);
const port = await freePort();
const server = track(
  Bun.spawn([process.execPath, join(import.meta.dir, "bench", "stream-server.ts"), home, String(port)], {
    stdout: "pipe",
    stderr: "inherit",
  }),
);
const reader = (server.stdout as ReadableStream<Uint8Array>).getReader();
let banner = "";
while (!banner.includes("listening")) {
  const { value, done } = await reader.read();
  if (done) throw new Error("stream server exited");
  banner += new TextDecoder().decode(value);
}
const url = `https://127.0.0.1:${port}/`;
const msg = (text: string) => ({ message: { messageId: crypto.randomUUID(), role: "ROLE_USER", parts: [{ text }] } });

// Warm-up: JIT and connections.
await client({ url, bundle, method: "SendStreamingMessage", params: msg("burst 5000") });

const burst = await client({ url, bundle, method: "SendStreamingMessage", params: msg("burst 50000") });
const paced = await client({ url, bundle, method: "SendStreamingMessage", params: msg("paced 2000 1") });

// A finished task with 10,000 stored events, then a reconnect that replays them all.
const tls = clientTls(readBundle(bundle));
const res = await fetch(url, {
  method: "POST",
  headers: { "content-type": "application/json", "a2a-version": "1.0" },
  body: JSON.stringify({
    jsonrpc: "2.0",
    id: 1,
    method: "SendMessage",
    params: { ...msg("burst 9998"), configuration: { historyLength: 0 } },
  }),
  tls,
} as RequestInit);
const taskId = ((await res.json()) as { result: { task: { id: string } } }).result.task.id;
const catchup = await client({ url, bundle, method: "SubscribeToTask", params: { id: taskId }, lastEventId: "0" });

await stop(server);

const results = {
  throughput: {
    events: burst.events,
    ms: Math.round(burst.ms),
    eventsPerSecond: Math.round(burst.eventsPerSecond),
    final: burst.final,
  },
  latency: {
    chunks: paced.chunks,
    p50Ms: pct(paced.latenciesMs, 50),
    p99Ms: pct(paced.latenciesMs, 99),
    maxMs: Math.max(...paced.latenciesMs),
  },
  catchup: { events: catchup.events, ms: Math.round(catchup.ms), lastId: catchup.lastId, final: catchup.final },
};
const verdict = (ok: boolean) => (ok ? "PASS" : "FAIL");
console.log(
  `one stream        ${results.throughput.events} events in ${results.throughput.ms} ms = ${results.throughput.eventsPerSecond} events/s (ended ${burst.final})`,
);
console.log(
  `event latency     p50 ${results.latency.p50Ms.toFixed(3)} ms, p99 ${results.latency.p99Ms.toFixed(3)} ms, max ${results.latency.maxMs.toFixed(3)} ms over ${paced.chunks} chunks`,
);
console.log(
  `catch-up replay   ${results.catchup.events} events (last id ${catchup.lastId}) in ${results.catchup.ms} ms`,
);
console.log("\ntargets");
console.log(
  `${verdict(results.throughput.eventsPerSecond >= 20_000)}  one SSE stream >= 20,000 events/s        ${results.throughput.eventsPerSecond}`,
);
console.log(
  `${verdict(results.latency.p99Ms <= 2)}  emit-to-subscriber p99 <= 2 ms           ${results.latency.p99Ms.toFixed(3)} ms`,
);
console.log(
  `${verdict(results.catchup.ms < 1000 && results.catchup.events >= 10_000)}  10,000-event catch-up < 1 s              ${results.catchup.ms} ms (${results.catchup.events} events)`,
);
const jsonAt = process.argv.indexOf("--json");
if (jsonAt !== -1) writeFileSync(process.argv[jsonAt + 1], JSON.stringify(results, null, 2));
process.exit(0);
