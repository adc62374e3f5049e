/**
 * Throughput of one agent on Postgres through 1, 2 and 3 replicas behind a TCP balancer (TLS passed through,
 * as in production; see scripts/replica-setup.ts), against the same Postgres server, with the SQLite node
 * alone and the @a2a-js/sdk server on its own durable store (DatabaseTaskStore) in a database of the same
 * Postgres server as the references. SendMessage with the echo executor, 32 clients over mTLS keep-alive,
 * loopback.
 *
 *   npm run bench:replicas [-- --duration S] [--warmup S] [--replicas 1,2,3] [--clients 32] [--fast-postgres]
 *   [--no-sdk]
 *
 * On a 2-core machine the point is the shape, not the height: every replica, Postgres, the balancer and the
 * load client share the same two cores, so more replicas cannot add CPU; the table shows what a task costs
 * (CPU of the replicas per task) and how latency moves as replicas are added.
 */
import { mkdtempSync, rmSync } from "node:fs";
import type { Subprocess } from "bun";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { CLK_TCK, cpuTicks, machineBusyTicks } from "./bench/proc";
import type { LoadResult } from "./bench/load";
import { percentile } from "./bench/report";
import { startPostgres } from "./postgres-server";
import { BINARY, startReplicaSetup } from "./replica-setup";

const { values } = parseArgs({
  options: {
    duration: { type: "string", default: "5" },
    warmup: { type: "string", default: "2" },
    replicas: { type: "string", default: "1,2,3" },
    clients: { type: "string", default: "32" },
    "fast-postgres": { type: "boolean", default: false },
    "no-sdk": { type: "boolean", default: false },
  },
});
const durationMs = Number(values.duration) * 1000;
const warmupMs = Number(values.warmup) * 1000;
const concurrency = Number(values.clients);
const counts = values.replicas!.split(",").map(Number);
const LOAD = join(import.meta.dir, "bench", "load.ts");
// As in bench.ts: the per-peer rate limit out of reach (its check still paid on every request).
// The per-caller task quota is checked on every task, but set past what a run stores from its one caller.
const SERVE = [
  "--executor",
  "echo",
  "--max-concurrent",
  "64",
  "--quiet",
  "--rate-limit-per-second",
  "1000000",
  "--rate-limit-burst",
  "1000000",
  "--max-caller-tasks",
  "1000000000",
];

interface Row {
  setup: string;
  rps: number;
  p50: number;
  p99: number;
  cpuUsPerTask: number;
  perReplicaCpuPct: number[];
  machineCpuPct: number;
  errors: number;
}

const dir = mkdtempSync(join(tmpdir(), "a2a-bench-replicas-"));
const postgres = await startPostgres({ durable: !values["fast-postgres"] });
const rows: Row[] = [];
try {
  for (const n of counts) {
    const setup = await startReplicaSetup({
      dir: join(dir, `r${n}`),
      replicas: n,
      serveArgs: SERVE,
      postgres,
      database: `bench_${n}`,
    });
    try {
      rows.push(
        await measure(
          `postgres, ${n} replica${n > 1 ? "s" : ""}`,
          setup.url,
          setup.clientBundle,
          setup.replicas.map((r) => r.proc.pid),
        ),
      );
    } finally {
      await setup.stop();
    }
  }
  rows.push(await sqliteReference());
  if (!values["no-sdk"]) rows.push(await sdkReference());
} finally {
  await postgres.stop();
  rmSync(dir, { recursive: true, force: true });
}

console.log(
  `\nSendMessage, echo executor, ${concurrency} clients, mTLS keep-alive through a TCP balancer, loopback, ${navigator.hardwareConcurrency} cores; ${values.duration} s measured after ${values.warmup} s warm-up; Postgres ${values["fast-postgres"] ? "with fsync off" : "durable (fsync on)"}\n`,
);
const header = [
  "setup",
  "tasks/s",
  "p50 ms",
  "p99 ms",
  "replica CPU µs/task",
  "CPU per replica",
  "machine CPU",
  "errors",
];
const table = [
  header,
  ...rows.map((r) => [
    r.setup,
    r.rps.toFixed(0),
    r.p50.toFixed(2),
    r.p99.toFixed(2),
    r.cpuUsPerTask.toFixed(0),
    r.perReplicaCpuPct.map((p) => `${p.toFixed(0)}%`).join(" "),
    `${r.machineCpuPct.toFixed(0)}%`,
    String(r.errors),
  ]),
];
const widths = header.map((_, i) => Math.max(...table.map((row) => row[i]!.length)));
for (const [i, row] of table.entries()) {
  console.log(row.map((c, j) => c.padEnd(widths[j]!)).join("  "));
  if (i === 0) console.log(widths.map((w) => "-".repeat(w)).join("  "));
}
if (rows.some((r) => r.errors > 0)) process.exit(1);

/** One load window against `url`: the replicas' CPU over exactly the window the clients count in. */
async function measure(label: string, url: string, bundle: string, pids: number[]): Promise<Row> {
  process.stdout.write(`  ${label}... `);
  const client = Bun.spawn([process.execPath, LOAD, JSON.stringify({ url, bundle, concurrency, binding: "jsonrpc" })], {
    stdin: "pipe",
    stdout: "pipe",
    stderr: "inherit",
  });
  await Bun.sleep(warmupMs);
  const s0 = pids.map(cpuTicks);
  const m0 = machineBusyTicks();
  const t0 = performance.now();
  client.stdin.write("mark\n");
  client.stdin.flush();
  await Bun.sleep(durationMs);
  const s1 = pids.map(cpuTicks);
  const m1 = machineBusyTicks();
  const windowS = (performance.now() - t0) / 1000;
  client.stdin.write("stop\n");
  client.stdin.flush();
  const result = JSON.parse(await new Response(client.stdout).text()) as LoadResult;
  await client.exited;
  const latencies = new Float64Array(result.latencies).sort();
  const ticks = s1.map((t, i) => t - s0[i]!);
  const total = ticks.reduce((a, b) => a + b, 0);
  const row: Row = {
    setup: label,
    rps: result.requests / (result.windowMs / 1000),
    p50: percentile(latencies, 0.5),
    p99: percentile(latencies, 0.99),
    cpuUsPerTask: result.requests ? ((total / CLK_TCK) * 1e6) / result.requests : NaN,
    perReplicaCpuPct: ticks.map((t) => (t / CLK_TCK / windowS) * 100),
    machineCpuPct: ((m1 - m0) / CLK_TCK / windowS) * 100,
    errors: result.errors,
  };
  console.log(`${row.rps.toFixed(0)} tasks/s${result.firstError ? ` (first error: ${result.firstError})` : ""}`);
  return row;
}

/** Resolves once something accepts TCP connections on `port`; throws if `proc` exits first or it takes 30 s. */
async function untilListening(port: number, proc: Subprocess): Promise<void> {
  for (let i = 0; i < 1500; i++) {
    if (proc.exitCode !== null) throw new Error(`the server on ${port} exited (${proc.exitCode}) before listening`);
    try {
      (await Bun.connect({ hostname: "127.0.0.1", port, socket: { data() {} } })).end();
      return;
    } catch {
      await Bun.sleep(20);
    }
  }
  throw new Error(`nothing listening on ${port} after 30 s`);
}

/**
 * The same load on the @a2a-js/sdk server with its own durable store on the same Postgres server (a database
 * of its own, made by the SDK's migrations), direct: durable against durable.
 */
async function sdkReference(): Promise<Row> {
  const setupDir = join(dir, "sdk");
  const cli = (args: string[]) => {
    const r = Bun.spawnSync([BINARY, ...args], { stdout: "pipe", stderr: "pipe" });
    if (r.exitCode !== 0) throw new Error(`a2a-node ${args.join(" ")} failed: ${r.stderr.toString()}`);
  };
  cli(["--home", join(setupDir, "ca"), "init-pki", "--name", "sdk-ca"]);
  for (const name of ["sdk", "client"])
    cli(["--home", join(setupDir, "ca"), "pki", "issue", name, "--out", join(setupDir, `${name}.bundle`)]);
  const admin = new Bun.SQL(postgres.adminUrl, { max: 1 });
  try {
    await admin.unsafe(`DROP DATABASE IF EXISTS "bench_sdk" WITH (FORCE)`);
    await admin.unsafe(`CREATE DATABASE "bench_sdk"`);
  } finally {
    await admin.close();
  }
  const database = new URL(postgres.adminUrl);
  database.pathname = "/bench_sdk";
  const port = 20_000 + Math.floor(Math.random() * 20_000);
  const proc = Bun.spawn(
    [
      process.execPath,
      join(import.meta.dir, "bench", "sdk-server.ts"),
      String(port),
      join(setupDir, "sdk.bundle"),
      database.href,
    ],
    { stdin: "ignore", stdout: "ignore", stderr: Bun.file(join(dir, "sdk-server.log")) },
  );
  try {
    await untilListening(port, proc);
    return await measure(
      "@a2a-js/sdk on postgres (reference)",
      `https://127.0.0.1:${port}/`,
      join(setupDir, "client.bundle"),
      [proc.pid],
    );
  } finally {
    proc.kill("SIGTERM");
    await proc.exited;
  }
}

/** The same load on one SQLite node, direct (no balancer): the reference. */
async function sqliteReference(): Promise<Row> {
  const setupDir = join(dir, "sqlite");
  const run = (args: string[]) => Bun.spawnSync([BINARY, ...args], { stdout: "pipe", stderr: "pipe" });
  run(["--home", join(setupDir, "ca"), "init-pki", "--name", "sqlite-node"]);
  run(["--home", join(setupDir, "ca"), "pki", "issue", "client", "--out", join(setupDir, "client.bundle")]);
  const port = 20_000 + Math.floor(Math.random() * 20_000);
  const proc = Bun.spawn(
    [BINARY, "--home", join(setupDir, "ca"), "serve", "--host", "127.0.0.1", "--port", String(port), ...SERVE],
    { stdin: "ignore", stdout: "ignore", stderr: "ignore" },
  );
  try {
    for (let i = 0; i < 500; i++) {
      try {
        (await Bun.connect({ hostname: "127.0.0.1", port, socket: { data() {} } })).end();
        break;
      } catch {
        await Bun.sleep(20);
      }
    }
    return await measure("sqlite, 1 node (reference)", `https://127.0.0.1:${port}/`, join(setupDir, "client.bundle"), [
      proc.pid,
    ]);
  } finally {
    proc.kill("SIGTERM");
    await proc.exited;
  }
}
