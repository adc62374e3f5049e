/**
 * A node holding a million tasks (`npm run bench:million`), on SQLite and on Postgres: how reads hold up and what
 * storage and retention cost at that size.
 *   1. seed N finished echo tasks straight into the store's schema (batched inserts, not through the API), the
 *      oldest 90% ended 60 days ago, the rest yesterday, all of one caller ('@local', the loopback listener's);
 *   2. bytes per stored task: the SQLite file (checkpointed) / N, or pg_total_relation_size of the task tables / N;
 *   3. the compiled binary on that store, measured from one client over its loopback listener (JSON-RPC):
 *      GetTask of random tasks p50/p99, ListTasks first page p99, and a deep page (a page token 90% of the way
 *      down the list) p99;
 *   4. retention: the node stopped, RetentionSweeper (src/tasks/retention.ts, its default batch of 200) deletes
 *      the 90% older than 30 days; the time it takes, and tasks/s.
 *   bun scripts/bench-million.ts [--tasks 1000000] [--store sqlite|postgres|both] [--samples 2000] [--skip-retention]
 *   [--json]
 */
import { mkdtempSync, rmSync, statSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { encodeTime } from "ulid";
import { homePaths } from "../src/home";
import { openDatabase } from "../src/store/database";
import { encodePageToken } from "../src/store/page-token";
import { openPostgres } from "../src/store/postgres/database";
import { PostgresTaskStore } from "../src/store/postgres/postgres-task-store";
import { SqliteTaskStore } from "../src/store/sqlite-task-store";
import { RetentionSweeper } from "../src/tasks/retention";
import { createLogger } from "../src/log";
import { startPostgres, type PostgresServer } from "./postgres-server";

const ROOT = join(import.meta.dir, "..");
const BINARY = join(ROOT, "dist", "a2a-node");
const args = process.argv.slice(2);
const USAGE =
  "usage: bun scripts/bench-million.ts [--tasks 1000000] [--store sqlite|postgres|both] [--samples 2000] [--skip-retention] [--json]";
// A run at the default size takes many minutes and gigabytes: a typo or --help must not start one.
if (args.includes("--help") || args.includes("-h")) {
  console.log(USAGE);
  process.exit(0);
}
for (let i = 0; i < args.length; i++) {
  const a = args[i];
  if (a === "--json" || a === "--skip-retention") continue;
  if (["--tasks", "--store", "--samples"].includes(a) && args[i + 1] !== undefined && !args[i + 1].startsWith("--")) {
    i++;
    continue;
  }
  console.error(`bench-million: unknown or incomplete option '${a}'\n${USAGE}`);
  process.exit(2);
}
const opt = (name: string, fallback: string) => {
  const i = args.indexOf(`--${name}`);
  return i === -1 ? fallback : args[i + 1]!;
};
const N = Number(opt("tasks", "1000000"));
const STORES = opt("store", "both") === "both" ? ["sqlite", "postgres"] : [opt("store", "both")];
const SAMPLES = Number(opt("samples", "2000"));
const JSON_OUT = args.includes("--json");
const SKIP_RETENTION = args.includes("--skip-retention");
if (
  !Number.isInteger(N) ||
  N < 10 ||
  !Number.isInteger(SAMPLES) ||
  SAMPLES < 1 ||
  !STORES.every((s) => s === "sqlite" || s === "postgres")
) {
  console.error(
    `bench-million: --tasks must be an integer ≥ 10, --samples ≥ 1, --store sqlite, postgres or both\n${USAGE}`,
  );
  process.exit(2);
}
const OWNER = "@local";
const DAY = 86_400_000;
const now = Date.now();
const OLD = Math.floor(N * 0.9);

const say = (s: string) => JSON_OUT || console.error(s);
const dir = mkdtempSync(join(tmpdir(), "a2a-bench-million-"));
let postgres: PostgresServer | undefined;
let node: ReturnType<typeof Bun.spawn> | undefined;
process.on("exit", () => {
  node?.kill("SIGKILL");
  rmSync(dir, { recursive: true, force: true });
});

const CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";
/** Task i: its id (a ULID of its creation time), its end, and its JSON as an echo task stores it. */
function task(i: number) {
  const created = i < OLD ? now - 60 * DAY + i : now - DAY + (i - OLD);
  let n = i;
  let suffix = "";
  for (let k = 0; k < 16; k++) {
    suffix = CROCKFORD[n % 32] + suffix;
    n = Math.floor(n / 32);
  }
  const id = encodeTime(created, 10) + suffix;
  const at = new Date(created + 5).toISOString();
  const text = `bench task ${i}: please echo this sentence back`;
  const messageId = crypto.randomUUID();
  const history = JSON.stringify([{ messageId, role: "ROLE_USER", parts: [{ text }], taskId: id, contextId: id }]);
  const artifacts = JSON.stringify([{ artifactId: `${id}-echo`, name: "echo", parts: [{ text }] }]);
  const working = new Date(created + 1).toISOString();
  const events = JSON.stringify([
    { statusUpdate: { taskId: id, contextId: id, status: { state: "TASK_STATE_WORKING", timestamp: working } } },
    {
      artifactUpdate: {
        taskId: id,
        contextId: id,
        artifact: { artifactId: `${id}-echo`, name: "echo", parts: [{ text }] },
        lastChunk: true,
      },
    },
    { statusUpdate: { taskId: id, contextId: id, status: { state: "TASK_STATE_COMPLETED", timestamp: at } } },
  ]);
  return { id, created: new Date(created).toISOString(), at, messageId, history, artifacts, working, events };
}

function cli(a: string[]): void {
  const r = Bun.spawnSync([BINARY, ...a], { stdout: "pipe", stderr: "pipe" });
  if (r.exitCode !== 0) throw new Error(`a2a-node ${a.join(" ")}: ${r.stderr}`);
}

const BATCH = 20_000;

/** SQLite: the rows an echo task leaves (events implied by the row: working_at, see schema.ts). */
function seedSqlite(path: string): void {
  const db = openDatabase(path);
  const insert = db.sqlite.prepare(
    `INSERT INTO tasks (id, context_id, owner, state, status_message, status_timestamp, metadata, request_message_id, executor, history, artifacts,
       created_at, updated_at, last_seq, working_at, head_bytes, history_bytes, artifacts_bytes)
     VALUES (?1, ?1, ?2, 'TASK_STATE_COMPLETED', NULL, ?3, NULL, ?4, 'echo', ?5, ?6, ?7, ?3, 3, ?8, octet_length(?1) * 2, octet_length(?5), octet_length(?6))`,
  );
  for (let start = 0; start < N; start += BATCH) {
    db.sqlite.transaction(() => {
      for (let i = start; i < Math.min(N, start + BATCH); i++) {
        const t = task(i);
        insert.run(t.id, OWNER, t.at, t.messageId, t.history, t.artifacts, t.created, t.working);
      }
    })();
  }
  db.sqlite.exec("PRAGMA wal_checkpoint(TRUNCATE)");
  db.close();
}

/** Postgres: the task rows and their events (one row of three events per task, as the store writes them). */
async function seedPostgres(url: string): Promise<void> {
  const database = await openPostgres(url, { max: 2 });
  const sql = database.sql;
  for (let start = 0; start < N; start += BATCH) {
    const cols: string[][] = Array.from({ length: 8 }, () => []);
    for (let i = start; i < Math.min(N, start + BATCH); i++) {
      const t = task(i);
      [t.id, t.at, t.messageId, t.history, t.artifacts, t.created, t.events, OWNER].forEach((v, k) => cols[k]!.push(v));
    }
    const [ids, ats, mids, histories, artifacts, createds, events, owners] = cols.map((c) => sql.array(c, "TEXT"));
    await sql.begin(async (tx) => {
      await tx`INSERT INTO tasks (id, context_id, owner, state, status_timestamp, last_seq, request_message_id, executor, created_at, updated_at, head_bytes, history_bytes, artifacts_bytes, history, artifacts)
        SELECT id, id, owner, 'TASK_STATE_COMPLETED', at, 3, mid, 'echo', created, at, octet_length(id) * 2, octet_length(h), octet_length(a), h, a
        FROM unnest(${ids}, ${owners}, ${ats}, ${mids}, ${createds}, ${histories}, ${artifacts}) AS v(id, owner, at, mid, created, h, a)`;
      await tx`INSERT INTO task_events (task_id, seq, last_seq, events) SELECT id, 1, 3, e FROM unnest(${ids}, ${events}) AS v(id, e)`;
    });
  }
  await sql`VACUUM ANALYZE tasks`;
  await sql`VACUUM ANALYZE task_events`;
  await database.close();
}

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return Math.round(s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]! * 100) / 100;
};

async function rpc(url: string, method: string, params: unknown): Promise<{ ms: number; result: any }> {
  const t0 = performance.now();
  const res = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json", "A2A-Version": "1.0" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
  });
  const body = (await res.json()) as { result?: unknown; error?: unknown };
  const ms = performance.now() - t0;
  if (!body.result) throw new Error(`${method} failed: ${JSON.stringify(body.error)}`);
  return { ms, result: body.result };
}

async function freePort(): Promise<number> {
  const s = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
  const port = s.port;
  s.stop(true);
  return port;
}

async function untilUp(url: string): Promise<void> {
  const end = Date.now() + 60_000;
  for (;;) {
    try {
      if ((await fetch(new URL("/health/live", url))).ok) return;
    } catch {}
    if (Date.now() > end || node?.exitCode != null) throw new Error("the node did not start");
    await Bun.sleep(100);
  }
}

async function measureReads(home: string, extra: string[]) {
  const port = await freePort();
  node = Bun.spawn(
    [
      BINARY,
      "--home",
      home,
      "serve",
      "--host",
      "127.0.0.1",
      "--port",
      "0",
      "--plain-http-port",
      String(port),
      "--executor",
      "echo",
      "--rate-limit-per-second",
      "0",
      "--retention-days",
      "0",
      ...extra,
    ],
    {
      stdout: "ignore",
      stderr: "ignore",
    },
  );
  const url = `http://127.0.0.1:${port}/`;
  await untilUp(url);
  const get: number[] = [];
  for (let k = 0; k < SAMPLES; k++) {
    const i = Math.floor(Math.random() * N);
    const r = await rpc(url, "GetTask", { id: task(i).id });
    if (r.result.id !== task(i).id) throw new Error("GetTask answered another task");
    get.push(r.ms);
  }
  const first: number[] = [];
  const deep: number[] = [];
  const deepAt = N - Math.floor(N * 0.9); // 90% of the way down (newest first): the task with this index
  const t = task(deepAt);
  const token = encodePageToken(t.at, t.id);
  const pages = Math.max(20, Math.floor(SAMPLES / 10));
  let total = 0;
  for (let k = 0; k < pages; k++) {
    const a = await rpc(url, "ListTasks", {});
    if (a.result.tasks.length === 0) throw new Error("the first page is empty");
    total = a.result.totalSize;
    first.push(a.ms);
    const b = await rpc(url, "ListTasks", { pageToken: token });
    if (b.result.tasks[0]?.id !== task(deepAt - 1).id)
      throw new Error(`the deep page starts at ${b.result.tasks[0]?.id}, not ${task(deepAt - 1).id}`);
    deep.push(b.ms);
  }
  node.kill("SIGTERM");
  await node.exited;
  node = undefined;
  return {
    totalSize: total,
    getTask: { p50: pct(get, 50), p99: pct(get, 99), samples: get.length },
    listFirstPage: { p50: pct(first, 50), p99: pct(first, 99), samples: first.length },
    listDeepPage: { p50: pct(deep, 50), p99: pct(deep, 99), samples: deep.length, position: N - deepAt },
  };
}

async function retention(store: ConstructorParameters<typeof RetentionSweeper>[0]) {
  const sweeper = new RetentionSweeper(store, { maxAgeMs: 30 * DAY });
  const t0 = performance.now();
  const deleted = await sweeper.sweep();
  const s = (performance.now() - t0) / 1000;
  if (deleted !== OLD) throw new Error(`retention deleted ${deleted} tasks, not ${OLD}`);
  return { deleted, seconds: Math.round(s * 10) / 10, tasksPerSecond: Math.round(deleted / s) };
}

const results: Record<string, unknown> = {};
for (const kind of STORES) {
  const home = join(dir, kind);
  cli(["--home", home, "init-pki", "--name", `million-${kind}`]);
  const path = homePaths(home).database;
  let seeded: number;
  let bytesPerTask: number;
  let extra: string[] = [];
  let url = "";
  say(`${kind}: seeding ${N} tasks...`);
  const t0 = performance.now();
  if (kind === "sqlite") {
    seedSqlite(path);
    seeded = (performance.now() - t0) / 1000;
    const size = statSync(path).size + (existsSync(`${path}-wal`) ? statSync(`${path}-wal`).size : 0);
    bytesPerTask = Math.round(size / N);
  } else {
    postgres ??= await startPostgres({ durable: true });
    const admin = new Bun.SQL(postgres.adminUrl, { max: 1 });
    await admin.unsafe(`CREATE DATABASE million`);
    await admin.close();
    const u = new URL(postgres.adminUrl);
    u.pathname = "/million";
    url = u.href;
    await seedPostgres(url);
    seeded = (performance.now() - t0) / 1000;
    const sql = new Bun.SQL(url, { max: 1 });
    const [row] =
      await sql`SELECT (pg_total_relation_size('tasks') + pg_total_relation_size('task_events'))::bigint AS n`;
    await sql.close();
    bytesPerTask = Math.round(Number(row.n) / N);
    extra = ["--database", url];
  }
  say(`${kind}: seeded in ${seeded.toFixed(1)} s, ${bytesPerTask} bytes per task; reading...`);
  const reads = await measureReads(home, extra);
  say(`${kind}: ${JSON.stringify(reads)}; retention...`);
  let swept: Awaited<ReturnType<typeof retention>> | undefined;
  if (SKIP_RETENTION) swept = undefined;
  else if (kind === "sqlite") {
    const db = openDatabase(path);
    const store = new SqliteTaskStore(db);
    swept = await retention(store);
    store.flush();
    db.close();
  } else {
    const database = await openPostgres(url, { max: 4 });
    swept = await retention(new PostgresTaskStore(database, { log: createLogger(() => {}) }));
    await database.close();
  }
  say(`${kind}: retention ${JSON.stringify(swept)}`);
  results[kind] = { tasks: N, seedSeconds: Math.round(seeded * 10) / 10, bytesPerTask, ...reads, retention: swept };
}
await postgres?.stop();

if (JSON_OUT) console.log(JSON.stringify(results, null, 2));
else {
  console.log(`\n${N} stored tasks (one caller), reads from one client over the loopback listener (ms):`);
  console.log(
    "| store | bytes/task | GetTask p50 | GetTask p99 | ListTasks first page p99 | deep page p99 | retention of 90% | seed |",
  );
  console.log("|---|---|---|---|---|---|---|---|");
  for (const [kind, r] of Object.entries(results) as [string, any][])
    console.log(
      `| ${kind} | ${r.bytesPerTask} | ${r.getTask.p50} | ${r.getTask.p99} | ${r.listFirstPage.p99} | ${r.listDeepPage.p99} | ${r.retention ? `${r.retention.deleted} in ${r.retention.seconds} s (${r.retention.tasksPerSecond}/s)` : "skipped"} | ${r.seedSeconds} s |`,
    );
}
