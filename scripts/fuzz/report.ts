/**
 * Counts, per class of input and overall, the samples of every failure (enough to reproduce each from seed and
 * index), and the two ways of showing them: a table for people, JSON for programs.
 */
import { createHash } from "node:crypto";
import type { Finding, Verdict } from "./classify";
import type { IdleReport } from "./idle-checks";
import type { FuzzInput } from "./input";

/** Everything that fails a run: the findings of single inputs, and what is found about the node as a whole. */
export type FailureKind =
  | Finding
  | "crash"
  | "leak-rss"
  | "leak-fds"
  | "leak-connections"
  | "stuck-tasks"
  | "lost-tasks"
  | "liveness"
  | "unclean-stop";

export const FAILURE_KINDS: FailureKind[] = [
  "crash",
  "hang",
  "unexpected-5xx",
  "internal-error",
  "dropped",
  "bad-answer",
  "scope-violation",
  "identity-violation",
  "leak-rss",
  "leak-fds",
  "leak-connections",
  "stuck-tasks",
  "lost-tasks",
  "liveness",
  "unclean-stop",
];

export interface Row {
  inputs: number;
  /** Connection ends: every answer read, closed by the node first, refused, no end in time. */
  answered: number;
  closed: number;
  refused: number;
  timeout: number;
  "2xx": number;
  "3xx": number;
  "4xx": number;
  "5xx": number;
  "501/505": number;
  /** Inputs with at least one finding. */
  failing: number;
  /** JSON-RPC and HTTP+JSON outcomes of the answers (see Verdict.rpc), for --json. */
  rpc: Record<string, number>;
}

const emptyRow = (): Row => ({
  inputs: 0,
  answered: 0,
  closed: 0,
  refused: 0,
  timeout: 0,
  "2xx": 0,
  "3xx": 0,
  "4xx": 0,
  "5xx": 0,
  "501/505": 0,
  failing: 0,
  rpc: {},
});

export interface Sample {
  kind: FailureKind;
  index?: number;
  listener?: string;
  family?: string;
  labels?: string[];
  transport?: string;
  expect?: string;
  outcome?: { end: string; statuses: number[]; rpc: string[]; ms: number; error?: string };
  detail?: string;
  /** The input as sent (tokens not yet replaced), each piece escaped and cut at 4 KiB, with its full size and hash. */
  input?: { pieces: { preview: string; bytes: number; pauseMs: number }[]; sha256: string };
  replay?: string;
}

const SAMPLES_PER_KIND = 5;

export class Tally {
  readonly byFamily: Record<string, Row> = {};
  readonly byLabel: Record<string, Row> = {};
  readonly statuses: Record<string, number> = {};
  readonly rpcCodes: Record<string, number> = {};
  readonly failures = Object.fromEntries(FAILURE_KINDS.map((k) => [k, 0])) as Record<FailureKind, number>;
  readonly samples: Sample[] = [];
  /** Inputs whose connection overlapped a crash of the node: not judged. */
  crashAffected = 0;
  skipped = 0;

  constructor(private readonly seed: number) {}

  add(input: FuzzInput, v: Verdict, ms: number, error?: string): void {
    const rows = [(this.byFamily[`${input.family}/${input.listener}`] ??= emptyRow())];
    for (const label of new Set(input.labels)) rows.push((this.byLabel[label] ??= emptyRow()));
    for (const row of rows) {
      row.inputs++;
      row[
        v.end === "answered" ? "answered" : v.end === "closed" ? "closed" : v.end === "refused" ? "refused" : "timeout"
      ]++;
      for (const s of v.statuses) {
        if (s === 501 || s === 505) row["501/505"]++;
        else if (s >= 200 && s < 600) row[`${Math.floor(s / 100)}xx` as "2xx"]++;
      }
      if (v.findings.length) row.failing++;
      for (const c of v.rpc) row.rpc[c] = (row.rpc[c] ?? 0) + 1;
    }
    for (const s of v.statuses) this.statuses[s] = (this.statuses[s] ?? 0) + 1;
    for (const c of v.rpc) this.rpcCodes[c] = (this.rpcCodes[c] ?? 0) + 1;
    for (const f of v.findings) {
      this.failures[f]++;
      this.sample(f, input, {
        detail: v.detail,
        outcome: { end: v.end, statuses: v.statuses, rpc: v.rpc, ms: Math.round(ms), error },
      });
    }
  }

  /** A failure of the node as a whole (a crash, a leak), with the inputs involved if any. */
  fail(kind: FailureKind, detail: string, inputs: FuzzInput[] = []): void {
    this.failures[kind]++;
    if (inputs.length === 0) this.sample(kind, undefined, { detail });
    for (const input of inputs.slice(0, SAMPLES_PER_KIND)) this.sample(kind, input, { detail });
  }

  private sample(kind: FailureKind, input: FuzzInput | undefined, extra: Partial<Sample>): void {
    if (this.samples.filter((s) => s.kind === kind).length >= SAMPLES_PER_KIND) return;
    const s: Sample = { kind, ...extra };
    if (input) {
      const h = createHash("sha256");
      for (const p of input.pieces) h.update(p.bytes);
      Object.assign(s, {
        index: input.index,
        listener: input.listener,
        family: input.family,
        labels: input.labels,
        transport: input.transport,
        expect: input.expect,
        input: {
          pieces: input.pieces.map((p) => ({
            preview: escapeBytes(p.bytes, 4096),
            bytes: p.bytes.length,
            pauseMs: p.pauseMs,
          })),
          sha256: h.digest("hex"),
        },
        replay: `npm run fuzz -- --seed ${this.seed} --replay ${input.index}`,
      });
    }
    this.samples.push(s);
  }

  get failed(): boolean {
    return FAILURE_KINDS.some((k) => this.failures[k] > 0);
  }
}

/** Bytes as readable text: printable ASCII kept, everything else escaped (\r \n \t \xNN). */
export function escapeBytes(bytes: Uint8Array, max = Infinity): string {
  let out = "";
  const n = Math.min(bytes.length, max);
  for (let i = 0; i < n; i++) {
    const b = bytes[i];
    if (b === 0x0d) out += "\\r";
    else if (b === 0x0a) out += "\\n";
    else if (b === 0x09) out += "\\t";
    else if (b === 0x5c) out += "\\\\";
    else if (b >= 0x20 && b < 0x7f) out += String.fromCharCode(b);
    else out += `\\x${b.toString(16).padStart(2, "0")}`;
    if (out.length > max) break;
  }
  return bytes.length > n ? `${out}… (${bytes.length} bytes)` : out;
}

const COLUMNS: Exclude<keyof Row, "rpc">[] = [
  "inputs",
  "answered",
  "closed",
  "refused",
  "timeout",
  "2xx",
  "3xx",
  "4xx",
  "5xx",
  "501/505",
  "failing",
];

export function table(title: string, rows: Record<string, Row>): string {
  const names = Object.keys(rows).sort();
  const width = Math.max(title.length, ...names.map((n) => n.length));
  const cols = COLUMNS.map((c) => Math.max(c.length, ...names.map((n) => String(rows[n][c]).length)));
  const line = (name: string, cells: (string | number)[]) =>
    `${name.padEnd(width)}  ${cells.map((c, i) => String(c).padStart(cols[i])).join("  ")}`;
  return [
    line(title, COLUMNS),
    ...names.map((n) =>
      line(
        n,
        COLUMNS.map((c) => rows[n][c]),
      ),
    ),
  ].join("\n");
}

export interface RunSettings {
  seed: number;
  requests: number;
  concurrency: number;
  slowConcurrency: number;
  hangTimeoutS: number;
  maxBody: number;
  skipSlow: boolean;
}

/** The report --json prints, and the table is made from. */
export function buildReport(
  tally: Tally,
  settings: RunSettings,
  inputsHash: string,
  durationS: number,
  idle: IdleReport,
  crashes: unknown[],
) {
  const f = tally.failures;
  return {
    seed: settings.seed,
    requests: settings.requests,
    inputsHash,
    settings,
    durationS: Math.round(durationS),
    counts: {
      crashes: f.crash,
      hangs: f.hang,
      unexpected5xx: f["unexpected-5xx"],
      refusals501or505: (tally.statuses["501"] ?? 0) + (tally.statuses["505"] ?? 0),
      internalErrors: f["internal-error"],
      dropped: f.dropped,
      badAnswers: f["bad-answer"],
      scopeViolations: f["scope-violation"],
      identityViolations: f["identity-violation"],
      leaks: f["leak-rss"] + f["leak-fds"] + f["leak-connections"] + f["stuck-tasks"] + f["lost-tasks"],
      liveness: f.liveness,
      uncleanStop: f["unclean-stop"],
      crashAffected: tally.crashAffected,
      skipped: tally.skipped,
    },
    failures: f,
    failed: tally.failed,
    byFamily: tally.byFamily,
    byLabel: tally.byLabel,
    statuses: tally.statuses,
    rpcCodes: tally.rpcCodes,
    resources: idle.resources,
    lingering: idle.lingering,
    tasks: idle.tasks,
    push: idle.push,
    nodeErrorLines: idle.nodeErrorLines.length,
    crashes,
    samplesFile: null as string | null,
  };
}
export type Report = ReturnType<typeof buildReport>;

export function formatReport(r: Report, tally: Tally, firstNodeError: string | undefined): string {
  const s = r.settings;
  const out: string[] = [];
  out.push(`\na2a-node fuzz: seed ${r.seed}, ${r.requests} inputs, inputs hash ${r.inputsHash}, ${r.durationS} s`);
  out.push(
    `(each input on its own connection; ${s.concurrency} at once, incomplete ones ${s.slowConcurrency} at once; hang = nothing for ${s.hangTimeoutS} s, or past the node's own timer)\n`,
  );
  out.push(table("class/listener", tally.byFamily));
  out.push(
    `\nHTTP statuses: ${Object.entries(r.statuses)
      .map(([k, n]) => `${k}×${n}`)
      .join(" ")}`,
  );
  out.push(
    `JSON-RPC and HTTP+JSON outcomes: ${Object.entries(r.rpcCodes)
      .sort((a, b) => b[1] - a[1])
      .map(([c, n]) => `${c}×${n}`)
      .join(" ")}`,
  );
  const { baseline: b, after: a } = r.resources;
  out.push(
    `resources: RSS ${b.rssMiB} → ${a.rssMiB} MiB, fds ${b.fds} → ${a.fds}, sockets ${b.sockets} → ${a.sockets}, open connections after ${a.openConnections}${r.resources.sameProcess ? "" : " (the node was restarted: not compared)"}`,
  );
  if (r.lingering.socketsAfter10s.length)
    out.push(
      `lingering: ${r.lingering.socketsAfter10s.length} sockets still open 10 s after the run (${r.lingering.idleAfterS === null ? "not all closed within the node's idle timer" : `idle after ${r.lingering.idleAfterS} s`}): ${r.lingering.socketsAfter10s.slice(0, 3).join("; ")}`,
    );
  out.push(
    `tasks: ${JSON.stringify(r.tasks.byState)}; ${r.tasks.acknowledged} named to callers, ${r.tasks.missing} missing; webhooks delivered to the sink ${r.push.deliveredToSink}, pending ${r.push.pendingDeliveries}`,
  );
  out.push(
    `node log: ${r.nodeErrorLines} error lines${firstNodeError ? `, first: ${firstNodeError.slice(0, 200)}` : ""}`,
  );
  out.push("\nfailures");
  for (const k of FAILURE_KINDS) out.push(`  ${k.padEnd(20)} ${tally.failures[k]}`);
  out.push(
    `  (501/505 refusals, legitimate: ${r.counts.refusals501or505}; inputs overlapping a crash, not judged: ${r.counts.crashAffected}; skipped: ${r.counts.skipped})`,
  );
  if (r.samplesFile) out.push(`\nsamples: ${r.samplesFile}`);
  out.push(tally.failed ? "\nFAILED" : "\nOK: no crash, hang, unexpected 5xx, leak or other failure");
  return out.join("\n");
}
