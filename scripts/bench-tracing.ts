/**
 * What tracing costs, two ways.
 *
 * Per span site (the default): with tracing off (the no-op tracer) and on (sampled, into the batching OTLP
 * exporter, whose sends go to a stub that answers at once: the collector's side is not ours to time). Every run
 * does the same span site: start a server span with a remote parent, set four attributes, end it; "on" includes
 * the export's encoding (spans are flushed every 512, inside the timed loop), so it is the whole CPU a span
 * costs. The baseline is the site's own work without a tracer (the attribute object), which the others include.
 *   bun scripts/bench-tracing.ts [SPANS]
 *
 * The node under load (--load): the compiled binary (echo executor, as `npm run bench` starts it) loaded with
 * SendMessage by 32 concurrent callers over mTLS (scripts/bench/load.ts), in four set-ups that differ only in
 * the home's config.toml: tracing off; on, sampling 1.0, exporting to a local OTLP/HTTP receiver that answers
 * at once; on, with the collector down (nothing listens: every export is refused); on, with a collector that
 * takes the connection and never answers (every export waits out its timeout). The set-ups are measured in
 * rounds, each round all four in a rotating order, so a drifting machine spreads over all of them; the ratios
 * to "off" are the figures to read (a shared machine's absolute numbers are not).
 *   npm run bench:tracing [-- --rounds 3 --duration 5 --warmup 2 --concurrency 32]
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { ATTR } from "../src/tracing/attributes";
import { OtlpHttpExporter } from "../src/tracing/otlp-exporter";
import { ParentBasedRatioSampler } from "../src/tracing/sampler";
import { SpanKind } from "../src/tracing/span";
import { parseTraceparent } from "../src/tracing/trace-context";
import { NoopTracer, RecordingTracer, type Tracer } from "../src/tracing/tracer";
import { clientTls, readBundle } from "./bench/rpc";
import { assertRunning, makePki, startServer, waitUntilAnswering, type RunningServer } from "./bench/servers";
import { CLK_TCK, cpuTicks, freePort, killAllNow, stop, stopAll, track } from "./bench/proc";
import { percentile } from "./bench/report";
import type { LoadResult } from "./bench/load";

const { values: flags, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    load: { type: "boolean", default: false },
    rounds: { type: "string", default: "3" },
    duration: { type: "string", default: "5" },
    warmup: { type: "string", default: "2" },
    concurrency: { type: "string", default: "32" },
  },
});
const N = Number(positionals[0] ?? 200_000);
const remote = parseTraceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")!;

function site(tracer: Tracer, i: number): void {
  const span = tracer.startSpan("a2a SendMessage", { kind: SpanKind.Server, parent: remote });
  span.setAttributes({
    [ATTR.rpcSystem]: "jsonrpc",
    [ATTR.rpcMethod]: "SendMessage",
    [ATTR.a2aTaskId]: `task-${i}`,
    [ATTR.a2aPeer]: "beta",
  });
  span.end();
}

let sink: unknown;
function baseline(_: Tracer, i: number): void {
  sink = {
    [ATTR.rpcSystem]: "jsonrpc",
    [ATTR.rpcMethod]: "SendMessage",
    [ATTR.a2aTaskId]: `task-${i}`,
    [ATTR.a2aPeer]: "beta",
  };
}

async function time(label: string, tracer: Tracer, after?: () => Promise<void>, body = site): Promise<number> {
  const run = async (n: number) => {
    for (let i = 0; i < n; i++) {
      body(tracer, i);
      if (after && i % 512 === 511) await after();
    }
    await after?.();
  };
  await run(10_000); // warm-up
  const t0 = performance.now();
  await run(N);
  const ns = ((performance.now() - t0) * 1e6) / N;
  console.log(`${label.padEnd(34)} ${ns.toFixed(0).padStart(6)} ns per span site (${N} spans)`);
  return ns;
}

async function spanSites(): Promise<void> {
  const stub: typeof fetch = Object.assign(
    async () => new Response("{}", { headers: { "content-type": "application/json" } }),
    { preconnect: () => {} },
  );
  const exporter = new OtlpHttpExporter({
    endpoint: "http://127.0.0.1:4318",
    resource: { "service.name": "bench" },
    fetch: stub,
  });
  await time("baseline (no tracer)", new NoopTracer(), undefined, baseline);
  await time("off (no-op tracer)", new NoopTracer());
  await time("on, ratio 1 (recorded, exported)", new RecordingTracer(new ParentBasedRatioSampler(1), exporter), () =>
    exporter.flush(),
  );
  const unsampled = parseTraceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00")!;
  Object.assign(remote, unsampled);
  await time("on, caller did not sample", new RecordingTracer(new ParentBasedRatioSampler(1), exporter));
  console.log("exporter:", JSON.stringify(exporter.stats()), sink ? "" : "(baseline did not run)");
}

/** The four set-ups: what the home's config.toml says about tracing. */
type Setup = "off" | "on" | "collector down" | "collector hung";
const SETUPS: Setup[] = ["off", "on", "collector down", "collector hung"];

interface Window {
  setup: Setup;
  requests: number;
  errors: number;
  windowS: number;
  serverTicks: number;
  latencies: number[];
}

async function underLoad(): Promise<void> {
  const rounds = Number(flags.rounds);
  const durationMs = Number(flags.duration) * 1000;
  const warmupMs = Number(flags.warmup) * 1000;
  const concurrency = Number(flags.concurrency);
  const dir = mkdtempSync(join(tmpdir(), "a2a-bench-tracing-"));
  process.on("exit", killAllNow);
  // A collector that takes every export at once (its work is not ours to time: it only counts).
  let exports = 0;
  const receiver = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(req) {
      await req.arrayBuffer();
      exports++;
      return new Response("{}", { headers: { "content-type": "application/json" } });
    },
  });
  // One that takes the connection and never answers: each export waits out the exporter's timeout.
  const hung = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    idleTimeout: 0,
    fetch: () => new Promise<Response>(() => {}),
  });
  const down = await freePort(); // nothing listens there
  const config: Record<Setup, string> = {
    off: "",
    on: `otlp_endpoint = "http://127.0.0.1:${receiver.port}"\ntrace_sampling_ratio = 1.0\n`,
    "collector down": `otlp_endpoint = "http://127.0.0.1:${down}"\n`,
    "collector hung": `otlp_endpoint = "http://127.0.0.1:${hung.port}"\n`,
  };
  const windows: Window[] = [];
  try {
    const pki = makePki(dir);
    const tls = clientTls(readBundle(pki.bundles.client));
    for (let round = 0; round < rounds; round++) {
      const order = SETUPS.map((_, i) => SETUPS[(i + round) % SETUPS.length]!);
      for (const setup of order) {
        writeFileSync(join(pki.a2aHome, "config.toml"), config[setup]);
        const server = await startServer("a2a-node", pki, dir);
        try {
          await waitUntilAnswering(server, tls);
          windows.push({
            setup,
            ...(await measure(server, pki.bundles.client, dir, concurrency, warmupMs, durationMs)),
          });
        } finally {
          await stop(server.proc);
        }
        console.error(`round ${round + 1}/${rounds}: ${setup} measured`);
      }
    }
  } finally {
    await stopAll();
    await receiver.stop(true);
    await hung.stop(true);
    rmSync(dir, { recursive: true, force: true });
  }
  report(windows, exports, concurrency);
}

/** One window of load: warm-up, then requests completed and the node's CPU over the same stretch. */
async function measure(
  server: RunningServer,
  bundle: string,
  dir: string,
  concurrency: number,
  warmupMs: number,
  durationMs: number,
): Promise<Omit<Window, "setup">> {
  const load = track(
    Bun.spawn(
      [
        process.execPath,
        join(import.meta.dir, "bench", "load.ts"),
        JSON.stringify({ url: server.url, bundle, concurrency, binding: server.binding }),
      ],
      { stdin: "pipe", stdout: "pipe", stderr: Bun.file(join(dir, `load-${server.proc.pid}.log`)) },
    ),
  );
  const say = (line: string) => {
    load.stdin.write(line);
    load.stdin.flush();
  };
  await Bun.sleep(warmupMs);
  assertRunning(server);
  const s0 = cpuTicks(server.proc.pid);
  const t0 = performance.now();
  say("mark\n");
  await Bun.sleep(durationMs);
  assertRunning(server);
  const s1 = cpuTicks(server.proc.pid);
  const t1 = performance.now();
  say("stop\n");
  const out = await new Response(load.stdout).text();
  if ((await load.exited) !== 0 || !out.trim()) throw new Error(`the load client failed (exit ${load.exitCode})`);
  const r = JSON.parse(out) as LoadResult;
  if (r.errors) throw new Error(`${r.errors} requests failed under load, the first: ${r.firstError}`);
  return {
    requests: r.requests,
    errors: r.errors,
    windowS: (t1 - t0) / 1000,
    serverTicks: s1 - s0,
    latencies: r.latencies,
  };
}

function report(windows: Window[], exports: number, concurrency: number): void {
  const rows = SETUPS.map((setup) => {
    const mine = windows.filter((w) => w.setup === setup);
    const requests = mine.reduce((s, w) => s + w.requests, 0);
    const seconds = mine.reduce((s, w) => s + w.windowS, 0);
    const ticks = mine.reduce((s, w) => s + w.serverTicks, 0);
    const sorted = Float64Array.from(mine.flatMap((w) => w.latencies)).sort();
    return {
      setup,
      tasksPerS: requests / seconds,
      p50: percentile(sorted, 0.5),
      p99: percentile(sorted, 0.99),
      cpuUsPerTask: ((ticks / CLK_TCK) * 1e6) / requests,
    };
  });
  const off = rows[0]!;
  console.log(
    `a2a-node SendMessage (echo executor), ${concurrency} callers, ${windows.length / SETUPS.length} rounds; ratios to "off" in ()`,
  );
  console.log(
    `${"tracing".padEnd(16)} ${"tasks/s".padStart(16)} ${"p50 ms".padStart(8)} ${"p99 ms".padStart(18)} ${"node CPU µs/task".padStart(24)}`,
  );
  const ratio = (v: number, base: number) => `(${(v / base).toFixed(2)})`;
  for (const r of rows)
    console.log(
      `${r.setup.padEnd(16)} ${r.tasksPerS.toFixed(0).padStart(8)} ${ratio(r.tasksPerS, off.tasksPerS).padStart(7)} ${r.p50.toFixed(2).padStart(8)} ${r.p99.toFixed(2).padStart(10)} ${ratio(r.p99, off.p99).padStart(7)} ${r.cpuUsPerTask.toFixed(0).padStart(16)} ${ratio(r.cpuUsPerTask, off.cpuUsPerTask).padStart(7)}`,
    );
  console.log(`the receiver took ${exports} export requests ("on")`);
}

if (flags.load) await underLoad();
else await spanSites();
