/** Turns measurements into the printed table and the PASS/FAIL lines against a2a-node's targets. */
import { SERVER_LABELS, type ServerName } from "./servers";

export interface Row {
  server: ServerName;
  concurrency: number;
  /** Every request opened a new mTLS connection (Connection: close) instead of reusing one. */
  newConnections: boolean;
  clientProcesses: number;
  /** Load windows summed into this row (interleaved rounds at the target concurrency). */
  rounds: number;
  requests: number;
  windowS: number;
  rps: number;
  p50Ms: number;
  p99Ms: number;
  /** Server CPU (all threads, user + system) over the window, per request completed in it. */
  cpuUsPerRequest: number;
  /** Share of one core the server / all load clients used over the window. */
  serverCpuPct: number;
  clientCpuPct: number;
  /** Rest of the machine's busy time: loopback softirq work charged to no process, and other processes. */
  otherCpuPct: number;
  errors: number;
  firstError?: string;
  /** VmHWM after this run (reported for the highest concurrency). */
  peakRssMB?: number;
  /** Largest size of a2a-node's WAL file during the row's loads (a2a-node only). */
  peakWalMB?: number;
}

export interface Startup {
  runsMs: number[];
  medianMs: number;
}

export interface Target {
  name: string;
  measured: string;
  pass: boolean | null; // null: not measured in this run (--only)
}

export const TARGET_CONCURRENCY = 32;
/** Clients in the load where every request opens a new connection. */
export const NEW_CONNECTION_TARGET_CLIENTS = 8;

export function isBroken(r: Row): boolean {
  return r.errors > 0 || r.requests === 0;
}

export function formatTable(rows: Row[]): string {
  const head = [
    "server",
    "clients",
    "req/s",
    "p50 ms",
    "p99 ms",
    "CPU µs/req",
    "server CPU",
    "client CPU",
    "other CPU",
    "peak RSS",
    "peak WAL",
    "errors",
  ];
  const body = rows.map((r) => [
    SERVER_LABELS[r.server],
    r.newConnections ? `${r.concurrency} new` : String(r.concurrency),
    r.rps.toFixed(0),
    r.p50Ms.toFixed(2),
    r.p99Ms.toFixed(2),
    r.cpuUsPerRequest.toFixed(0),
    `${r.serverCpuPct.toFixed(0)}%`,
    `${r.clientCpuPct.toFixed(0)}%`,
    `${Math.max(0, r.otherCpuPct).toFixed(0)}%`, // /proc/stat and /proc/PID are not read at the same instant
    r.peakRssMB === undefined ? "" : `${r.peakRssMB.toFixed(1)} MB`,
    r.peakWalMB === undefined ? "" : `${r.peakWalMB.toFixed(1)} MiB`,
    isBroken(r) ? `BROKEN: ${r.errors}` : "0",
  ]);
  const widths = head.map((h, i) => Math.max(h.length, ...body.map((b) => b[i].length)));
  const line = (cells: string[]) =>
    cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join("  ");
  return [line(head), widths.map((w) => "-".repeat(w)).join("  "), ...body.map(line)].join("\n");
}

/** The targets of issue 22, each against the reference measured in the same run. */
export function evaluateTargets(rows: Row[], startup: Startup | undefined): Target[] {
  const at = (server: ServerName, concurrency = TARGET_CONCURRENCY, newConnections = false) =>
    rows.find(
      (r) =>
        r.server === server && r.concurrency === concurrency && r.newConnections === newConnections && !isBroken(r),
    );
  const a2a = at("a2a-node");
  const sdk = at("sdk");
  const bare = at("bare");
  const targets: Target[] = [];
  const target = (name: string, measured: () => [string, boolean] | undefined) => {
    const m = measured();
    targets.push(m ? { name, measured: m[0], pass: m[1] } : { name, measured: "not measured", pass: null });
  };
  const c = TARGET_CONCURRENCY;

  target(`a2a-node req/s ≥ 3× @a2a-js/sdk at ${c} clients`, () => {
    if (!a2a || !sdk) return undefined;
    const x = a2a.rps / sdk.rps;
    return [`${x.toFixed(2)}× (${a2a.rps.toFixed(0)} vs ${sdk.rps.toFixed(0)} req/s)`, x >= 3];
  });
  target(`a2a-node p99 ≤ @a2a-js/sdk's p99 at ${c} clients`, () => {
    if (!a2a || !sdk) return undefined;
    return [`${a2a.p99Ms.toFixed(1)} vs ${sdk.p99Ms.toFixed(1)} ms`, a2a.p99Ms <= sdk.p99Ms];
  });
  target(`a2a-node CPU/request ≤ 6× bare echo at ${c} clients`, () => {
    if (!a2a || !bare) return undefined;
    const x = a2a.cpuUsPerRequest / bare.cpuUsPerRequest;
    return [`${x.toFixed(2)}× (${a2a.cpuUsPerRequest.toFixed(0)} vs ${bare.cpuUsPerRequest.toFixed(0)} µs)`, x <= 6];
  });
  target("a2a-node peak RSS ≤ 110 MB", () =>
    a2a?.peakRssMB === undefined ? undefined : [`${a2a.peakRssMB.toFixed(1)} MB`, a2a.peakRssMB <= 110],
  );
  target(`a2a-node req/s ≥ 2.5× @a2a-js/sdk, a new connection each (${NEW_CONNECTION_TARGET_CLIENTS} clients)`, () => {
    const a = at("a2a-node", NEW_CONNECTION_TARGET_CLIENTS, true);
    const s = at("sdk", NEW_CONNECTION_TARGET_CLIENTS, true);
    if (!a || !s) return undefined;
    const x = a.rps / s.rps;
    return [`${x.toFixed(2)}× (${a.rps.toFixed(0)} vs ${s.rps.toFixed(0)} req/s)`, x >= 2.5];
  });
  target("a2a-node start to first answer ≤ 100 ms", () => {
    if (!startup) return undefined;
    const runs = startup.runsMs.map((m) => m.toFixed(0)).join(", ");
    return [`${startup.medianMs.toFixed(0)} ms median (runs: ${runs} ms)`, startup.medianMs <= 100];
  });
  return targets;
}

export function formatTargets(targets: Target[]): string {
  const w = Math.max(...targets.map((t) => t.name.length));
  return targets
    .map((t) => `${t.pass === null ? "n/a " : t.pass ? "PASS" : "FAIL"}  ${t.name.padEnd(w)}  ${t.measured}`)
    .join("\n");
}

/** Nearest-rank percentile of an ascending array. */
export function percentile(sorted: Float64Array, p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(p * sorted.length) - 1))];
}

/**
 * a2a-node against the @a2a-js/sdk on the same kind of durable store at the same durability level (tasks/s
 * ratio, and each one's p99), and what syncing every commit costs each; undefined when no pair was measured.
 * Durable against durable, the target is ≥ 3× the SDK's tasks/s with a p99 no longer than the SDK's.
 */
export function durableRatios(rows: Row[]): string | undefined {
  const at = (server: ServerName) =>
    rows.find((r) => r.server === server && r.concurrency === TARGET_CONCURRENCY && !r.newConnections && !isBroken(r));
  const pairs: [ServerName, ServerName, string, boolean][] = [
    ["a2a-node", "sdk-sqlite", "SQLite, the WAL synced at checkpoints: survives kill -9", true],
    ["a2a-node-fsync", "sdk-sqlite-fsync", "SQLite, every commit synced: survives a power loss", true],
    ["a2a-node-postgres", "sdk-postgres", "Postgres, synchronous_commit=on: survives a power loss", true],
    ["a2a-node", "a2a-node-fsync", "a2a-node, the cost of syncing every commit", false],
    ["sdk-sqlite", "sdk-sqlite-fsync", "@a2a-js/sdk, the cost of syncing every commit", false],
  ];
  const lines: string[] = [];
  for (const [a, b, what, target] of pairs) {
    const x = at(a);
    const y = at(b);
    if (!x || !y) continue;
    const ratio = x.rps / y.rps;
    const verdict = !target ? "    " : ratio >= 3 && x.p99Ms <= y.p99Ms ? "PASS" : "FAIL";
    lines.push(
      `${verdict}  ${ratio.toFixed(2)}× req/s  ${SERVER_LABELS[a]} ${x.rps.toFixed(0)} vs ${SERVER_LABELS[b]} ${y.rps.toFixed(0)};` +
        ` p99 ${x.p99Ms.toFixed(1)} vs ${y.p99Ms.toFixed(1)} ms  (${what})`,
    );
  }
  return lines.length > 0 ? lines.join("\n") : undefined;
}
