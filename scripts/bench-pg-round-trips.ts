/**
 * What one task costs the shared Postgres database (`npm run bench:pg-round-trips`): statements and
 * transactions per blocking SendMessage (echo executor) on one replica of the compiled binary, counted by the
 * server itself (pg_stat_statements, pg_stat_database), one client at a time (no group commit can merge two
 * tasks: the cost of a task alone) and 32 at once (what batching saves). The statements are listed by count
 * per task, so a change to the store's round trips shows here first.
 *   bun scripts/bench-pg-round-trips.ts [--tasks 300] [--json]
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startPostgres } from "./postgres-server";
import { startReplicaSetup } from "./replica-setup";

const args = process.argv.slice(2);
const opt = (name: string, fallback: number) => {
  const i = args.indexOf(`--${name}`);
  return i === -1 ? fallback : Number(args[i + 1]);
};
const TASKS = opt("tasks", 300);
const json = args.includes("--json");

const dir = mkdtempSync(join(tmpdir(), "a2a-bench-rt-"));
const postgres = await startPostgres({
  durable: true,
  flags: ["-c", "shared_preload_libraries=pg_stat_statements", "-c", "pg_stat_statements.track_utility=on"],
});
const plainPort = await freePort();
const setup = await startReplicaSetup({
  dir,
  replicas: 1,
  postgres,
  database: "rt",
  // Leases renewed every 100 s: no renewal lands in the count.
  serveArgs: [
    "--executor",
    "echo",
    "--plain-http-port",
    String(plainPort),
    "--lease",
    "300",
    "--rate-limit-per-second",
    "0",
    "--max-concurrent",
    "64",
  ],
});
const sql = new Bun.SQL(setup.databaseUrl, { max: 1 });
const url = `http://127.0.0.1:${plainPort}/`;

async function send(i: number): Promise<void> {
  const body = JSON.stringify({
    jsonrpc: "2.0",
    id: i,
    method: "SendMessage",
    params: { message: { messageId: crypto.randomUUID(), role: "ROLE_USER", parts: [{ text: `t${i}` }] } },
  });
  const res = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json", "A2A-Version": "1.0" },
    body,
  });
  const answer = (await res.json()) as { result?: { task?: { status: { state: string } } } };
  if (answer.result?.task?.status.state !== "TASK_STATE_COMPLETED")
    throw new Error(`task ${i} did not complete: ${JSON.stringify(answer)}`);
}

interface Count {
  statements: number;
  transactions: number;
  byQuery: { query: string; perTask: number }[];
}

async function measure(clients: number): Promise<Count> {
  await sql`CREATE EXTENSION IF NOT EXISTS pg_stat_statements`;
  await Promise.all(Array.from({ length: 20 }, (_, i) => send(i))); // warm-up
  await Bun.sleep(200);
  await sql`SELECT pg_stat_statements_reset()`;
  await sql`SELECT pg_stat_reset()`;
  const [before] = await sql`SELECT xact_commit::int AS n FROM pg_stat_database WHERE datname = current_database()`;
  let next = 0;
  await Promise.all(
    Array.from({ length: clients }, async () => {
      while (next < TASKS) await send(next++);
    }),
  );
  await Bun.sleep(300); // the statements after the answer (lease release, push look-ups) land
  // pg_stat_database is updated by each backend at the end of a transaction, reported lazily: wait for it.
  await sql`SELECT pg_stat_force_next_flush()`.catch(() => {});
  const rows = (await sql`
    SELECT query, calls::int AS calls FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid
    WHERE d.datname = current_database() AND query NOT LIKE '%pg_stat%' AND query NOT LIKE '%xact_commit%'
    ORDER BY calls DESC`) as { query: string; calls: number }[];
  await Bun.sleep(600); // the stats collector's flush interval (pg_stat_database is updated at most once a second)
  const [after] = await sql`SELECT xact_commit::int AS n FROM pg_stat_database WHERE datname = current_database()`;
  const statements = rows.reduce((n, r) => n + r.calls, 0);
  return {
    statements: statements / TASKS,
    transactions: (after.n - before.n) / TASKS,
    byQuery: rows.map((r) => ({ query: r.query.replace(/\s+/g, " ").slice(0, 150), perTask: r.calls / TASKS })),
  };
}

try {
  const alone = await measure(1);
  const concurrent = await measure(32);
  if (json) console.log(JSON.stringify({ tasks: TASKS, alone, concurrent }, null, 2));
  else {
    for (const [name, c] of [
      ["1 client (a task alone)", alone],
      ["32 clients", concurrent],
    ] as const) {
      console.log(
        `\n${name}: ${c.statements.toFixed(2)} statements and ${c.transactions.toFixed(2)} transactions per task (${TASKS} tasks)`,
      );
      for (const q of c.byQuery) if (q.perTask >= 0.01) console.log(`  ${q.perTask.toFixed(2)}  ${q.query}`);
    }
  }
} finally {
  await sql.close();
  await setup.stop();
  await postgres.stop();
  rmSync(dir, { recursive: true, force: true });
}

async function freePort(): Promise<number> {
  const s = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
  const port = s.port;
  s.stop(true);
  return port;
}
