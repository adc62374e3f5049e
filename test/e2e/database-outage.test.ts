/**
 * A database outage strands no task (issue 20): compiled replicas (openai executor, tasks streaming from a
 * model) on a real Postgres server of this file's own, started as the run's shared one is (that one cannot be
 * stopped under the other files). While the model streams, the database goes away, in two ways:
 *
 * - stopped and started again (SIGINT, as `pg_ctl stop -m fast` does), on one replica and on three;
 * - a dropped connection with the server up: the table the tasks' events go to is locked, so each replica's
 *   next write waits in the server; those backends are ended with pg_terminate_backend, then the lock is let go.
 *
 * Every accepted task must reach one recorded outcome within the lease time plus a bound (no task held and
 * WORKING for ever), with one terminal event and gapless events, and no lease left behind; the replicas come
 * back ready without a restart. Before the fix, a task whose writes failed stayed WORKING for ever, its lease
 * renewed by the replica that had given up on it ("task finished, state failed" logged, nothing stored).
 */
import { afterAll, beforeAll, describe, expect, it, onTestFailed } from "vitest";
import { SQL } from "bun";
import { serveBinary, type ServedBinary } from "../helpers/binary";
import { makeFleet, type Fleet, type TlsIdentity } from "../helpers/fleet";
import { startGatedModel, type GatedModel } from "../fakes/gated-model";
import { databaseName, startPostgres, type PostgresServer } from "../helpers/postgres-server";
import { get, rpc, userMessage } from "../helpers/rpc";
import { openSse, type SseConnection } from "../helpers/sse";

const LEASE_S = 1;
/** Past the lease, how long an outcome may take on this machine (2 shared cores): a liveness bound, not a speed. */
const BOUND_MS = 30_000;
const TERMINAL = ["TASK_STATE_COMPLETED", "TASK_STATE_FAILED", "TASK_STATE_CANCELED", "TASK_STATE_REJECTED"];

let server: PostgresServer;
let admin: SQL;
let fleet: Fleet;
let alpha: TlsIdentity;

beforeAll(async () => {
  [server, fleet] = await Promise.all([startPostgres(), makeFleet(["r1", "r2", "r3", "alpha"])]);
  alpha = fleet.identity("alpha");
  admin = new SQL(server.adminUrl, { max: 1 });
});

afterAll(async () => {
  await admin?.close();
  await server?.stop();
  fleet?.cleanup();
});

/** One scenario's world: a fresh database, a model that holds "[hold]" tasks after one word, `n` replicas. */
interface World {
  url: string;
  sql: SQL;
  model: GatedModel;
  replicas: ServedBinary[];
  /** Lets every held request go, and answers later ones (a task run again) at once. */
  free(): void;
  close(): Promise<void>;
}

async function world(n: number): Promise<World> {
  const name = databaseName("outage");
  await admin.unsafe(`CREATE DATABASE "${name}"`);
  const url = new URL(server.adminUrl);
  url.pathname = `/${name}`;
  let freed = false;
  const model = startGatedModel({
    holdIf: (t) => t.includes("[hold]") && !freed,
    holdAfterChunks: 1,
    reply: (t) => `one two three four five six: ${t}`,
  });
  const args = [
    "--executor",
    "openai",
    "--model-url",
    model.url,
    "--database",
    url.href,
    "--lease",
    String(LEASE_S),
    "--max-concurrent",
    "16",
  ];
  const replicas = await Promise.all(["r1", "r2", "r3"].slice(0, n).map((r) => serveBinary(fleet.homes[r]!, args)));
  const sql = new SQL(url.href, { max: 2 });
  // What the replicas said is what tells why a task did not end: shown with the failure.
  onTestFailed(() => {
    for (const [i, r] of replicas.entries()) console.log(`--- replica ${i + 1} log\n${r.log()}${r.stderr()}`);
  });
  return {
    url: url.href,
    sql,
    model,
    replicas,
    free() {
      freed = true;
      model.release("[hold]");
    },
    async close() {
      await Promise.all(replicas.map((r) => r.stop("SIGKILL")));
      model.stop();
      await sql.close();
      await admin.unsafe(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
    },
  };
}

interface Streaming {
  id: string;
  text: string;
  replica: ServedBinary;
  stream: SseConnection;
}

/**
 * Starts a streaming task on `replica` and resolves once its first word is stored (the node sends an event to
 * its stream only after committing it): the task is mid-stream, its model request held.
 */
async function streamingTask(replica: ServedBinary, label: string): Promise<Streaming> {
  const text = `[hold] ${label} ${crypto.randomUUID()}`;
  const stream = await openSse(replica.url, alpha, "SendStreamingMessage", { message: userMessage(text) });
  expect(stream.status).toBe(200);
  let id: string | undefined;
  for (;;) {
    const e = await stream.next();
    if (!e) throw new Error(`the stream of "${label}" ended before its first word`);
    const r = e.data.result;
    id ??= r?.task?.id ?? r?.statusUpdate?.taskId;
    if (r?.artifactUpdate) break;
  }
  return { id: id!, text, replica, stream };
}

/** Rejects naming `what` unless `p` settles within `ms`: the liveness bound of an outcome. */
function within<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<never>(
    (_, reject) => (timer = setTimeout(() => reject(new Error(`not within ${ms} ms: ${what}`)), ms)),
  );
  return Promise.race([p, late]).finally(() => clearTimeout(timer));
}

/** The task's stored events, in order, from the database itself. */
async function storedEvents(sql: SQL, id: string): Promise<{ seq: number; response: any }[]> {
  const rows = (await sql`SELECT seq, events FROM task_events WHERE task_id = ${id} ORDER BY seq`) as {
    seq: number;
    events: string;
  }[];
  return rows.flatMap((r) =>
    (JSON.parse(r.events) as unknown[]).map((response, i) => ({ seq: r.seq + i, response: response as any })),
  );
}

const stateOf = (response: any): string | undefined => response?.statusUpdate?.status?.state;

/**
 * Every task reached one stored outcome within the lease time plus the bound, once: the database holds a
 * terminal state whose event is the only terminal one and the last, events numbered 1, 2, 3 ... with no gap
 * (also as SubscribeToTask replays them), no lease left on it, and "task finished" logged once, by one replica.
 */
async function expectOutcomes(w: World, tasks: Streaming[]): Promise<void> {
  const finished = (t: Streaming) =>
    Promise.any(w.replicas.map((r) => r.waitForLine({ msg: "task finished", task_id: t.id })));
  await within(Promise.all(tasks.map(finished)), LEASE_S * 1000 + BOUND_MS, "every task's outcome");
  for (const t of tasks) {
    const [row] = (await w.sql`SELECT state FROM tasks WHERE id = ${t.id}`) as { state: string }[];
    expect(TERMINAL, `task ${t.id} is ${row?.state} in the database`).toContain(row?.state);
    const events = await storedEvents(w.sql, t.id);
    expect(
      events.map((e) => e.seq),
      `task ${t.id}'s events`,
    ).toEqual(events.map((_, i) => i + 1));
    const terminal = events.filter((e) => TERMINAL.includes(stateOf(e.response) ?? ""));
    const summary = events
      .map(
        (e) =>
          `${e.seq}:${stateOf(e.response) ?? "artifact"}${e.response.statusUpdate?.status?.message ? ` (${JSON.stringify(e.response.statusUpdate.status.message.parts)})` : ""}`,
      )
      .join(", ");
    expect(
      terminal.map((e) => e.seq),
      `task ${t.id}'s terminal events, of ${summary}`,
    ).toEqual([events.length]);
    expect(stateOf(terminal[0]!.response)).toBe(row!.state);
    expect(await w.sql`SELECT replica FROM task_leases WHERE task_id = ${t.id}`).toHaveLength(0);
    const lines = w.replicas.flatMap((r) => r.lines().filter((l) => l.msg === "task finished" && l.task_id === t.id));
    expect(lines, `"task finished" lines of ${t.id}`).toHaveLength(1);
    const replay = await (
      await openSse(w.replicas[0]!.url, alpha, "SubscribeToTask", { id: t.id }, { "last-event-id": "0" })
    ).rest();
    const numbered = replay.filter((e) => e.id !== undefined);
    expect(numbered.map((e) => Number(e.id))).toEqual(events.map((e) => e.seq));
    expect(stateOf(numbered.at(-1)?.data.result)).toBe(row!.state);
  }
  // Ready again without a restart, no task left waiting to be recovered (the model check is the fake's own).
  for (const r of w.replicas) {
    const ready = await get(`${r.url}/health/ready`, alpha);
    expect(ready.body?.checks?.database, ready.text).toMatchObject({
      ok: true,
      detail: expect.stringMatching(/committed$/),
    });
  }
}

/** Stops the server, checks the replicas refuse new work meanwhile, lets the model go, starts it again. */
async function outage(w: World, tasks: Streaming[]): Promise<void> {
  await server.halt();
  for (const r of w.replicas) {
    const refused = await rpc(r.url, alpha, "SendMessage", { message: userMessage("sent during the outage") });
    expect(refused.body?.result, refused.text).toBeUndefined();
    expect(refused.body?.error?.code, refused.text).toBe(-32603);
    const ready = await get(`${r.url}/health/ready`, alpha);
    expect(ready.status, ready.text).toBe(503);
    expect(ready.body?.checks?.database?.ok, ready.text).toBe(false);
  }
  w.free();
  // Each task's next writes fail while the server is down: its replica says so.
  await Promise.all(tasks.map((t) => t.replica.waitForLine({ msg: /^could not store a task's writes/, task: t.id })));
  await server.resume();
}

/**
 * Locks task_events, lets the model go, waits until each replica's write of the tasks' events waits on the
 * lock in the server, ends those connections (every connection of the replicas, as a failover or a network
 * cut does), and lets the lock go.
 */
async function droppedConnections(w: World): Promise<void> {
  const holder = await w.sql.reserve();
  try {
    await holder`BEGIN`;
    await holder`LOCK TABLE task_events IN ACCESS EXCLUSIVE MODE`;
    const [{ pid: holderPid }] = (await holder`SELECT pg_backend_pid() AS pid`) as { pid: number }[];
    w.free();
    // No event tells when a statement waits in the server: its state is polled there.
    const name = new URL(w.url).pathname.slice(1);
    for (;;) {
      // Only a replica's group commit writes task_events, one statement at a time: one waiter per replica.
      const [{ n }] =
        (await admin`SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = ${name} AND wait_event_type = 'Lock'
        AND pid <> ${holderPid}`) as { n: number }[];
      if (n >= w.replicas.length) break;
      await Bun.sleep(20);
    }
    await admin`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = ${name} AND pid <> ${holderPid}`;
    await holder`ROLLBACK`;
  } finally {
    holder.release();
  }
  // Each replica's cut write failed: sent again on a live connection (the group's warning), or not stored.
  await Promise.all(
    w.replicas.map((r) => r.waitForLine({ msg: /^(could not store a task's writes|a group commit failed)/ })),
  );
}

describe("Postgres stopped and started again while tasks stream", () => {
  it("one replica: every streaming task reaches one recorded outcome, with gapless events, and the replica is ready again", async () => {
    const w = await world(1);
    try {
      const tasks = await Promise.all([0, 1, 2, 3].map((i) => streamingTask(w.replicas[0]!, `alone ${i}`)));
      await outage(w, tasks);
      await expectOutcomes(w, tasks);
    } finally {
      await w.close();
    }
  }, 120_000);

  it("three replicas: the tasks of each reach one recorded outcome, none held for ever by the replica that could not store it", async () => {
    const w = await world(3);
    try {
      const tasks = await Promise.all(
        w.replicas.flatMap((r, i) => [0, 1].map((k) => streamingTask(r, `r${i + 1} ${k}`))),
      );
      await outage(w, tasks);
      await expectOutcomes(w, tasks);
    } finally {
      await w.close();
    }
  }, 120_000);
});

describe("the replicas' connections dropped (pg_terminate_backend) with the server up, while tasks stream", () => {
  it("one replica: the task whose write was cut reaches one recorded outcome, with gapless events", async () => {
    const w = await world(1);
    try {
      const tasks = [await streamingTask(w.replicas[0]!, "cut alone")];
      await droppedConnections(w);
      await expectOutcomes(w, tasks);
    } finally {
      await w.close();
    }
  }, 120_000);

  it("three replicas: every task reaches one recorded outcome, with gapless events", async () => {
    const w = await world(3);
    try {
      const tasks = await Promise.all(w.replicas.map((r, i) => streamingTask(r, `cut r${i + 1}`)));
      await droppedConnections(w);
      await expectOutcomes(w, tasks);
    } finally {
      await w.close();
    }
  }, 120_000);
});
