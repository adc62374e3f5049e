/**
 * Push deliveries commit with their events (issue 20), on every TaskStore that queues them (SQLite and
 * Postgres, a real file and a real server; one suite for both): a commit that stores a task's events also
 * stores, in the same transaction, one delivery per event for each webhook of the task, with the event's JSON
 * as its body, in event order; the store's listener hears of them only once committed. A task without a webhook
 * queues nothing; a task whose events cannot be stored queues nothing (rolled back with them), and the other
 * tasks of its commit keep theirs. A dispatcher then sends them in order.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { rmSync } from "node:fs";
import { join } from "node:path";
import { createLogger, type Logger } from "../../src/log";
import type { StreamResponse } from "../../src/protocol/types";
import type { DeliveryQueue } from "../../src/push/delivery-queue";
import type { PushConfigStore } from "../../src/push/push-config-store";
import { PushDispatcher } from "../../src/push/push-dispatcher";
import { openDatabase } from "../../src/store/database";
import { PostgresDeliveryQueue } from "../../src/store/postgres/postgres-delivery-queue";
import { PostgresPushConfigStore } from "../../src/store/postgres/postgres-push-config-store";
import { PostgresTaskStore } from "../../src/store/postgres/postgres-task-store";
import { SqliteDeliveryQueue } from "../../src/store/sqlite-delivery-queue";
import { SqlitePushConfigStore } from "../../src/store/sqlite-push-config-store";
import { SqliteTaskStore } from "../../src/store/sqlite-task-store";
import type { QueuedWithEvent, TaskStore } from "../../src/tasks/task-store";
import { emptyPostgres } from "../helpers/postgres-stores";
import { Receiver } from "../fakes/webhook-receiver";
import { tempDir } from "../helpers/temp-dir";

interface Opened {
  store: TaskStore;
  configs: PushConfigStore;
  queue: DeliveryQueue;
  /** The bodies of the deliveries in the queue, by id, read from the database itself. */
  stored(): Promise<{ id: string; task_id: string; config_id: string; body: string }[]>;
  /** Makes every later write of this task's events fail in the database (as a disk error would). */
  failEventsOf(taskId: string): Promise<void>;
  close(): Promise<void>;
}

const quiet: Logger = createLogger(() => {});

const stores: [string, () => Promise<Opened>][] = [
  [
    "SQLite (a real file)",
    async () => {
      const dir = tempDir("a2a-outbox-");
      const database = openDatabase(join(dir, "a2a-node.db"));
      const configs = new SqlitePushConfigStore(database);
      const queue = new SqliteDeliveryQueue(database);
      const store = new SqliteTaskStore(database, {
        log: quiet,
        outbox: (taskId, events) => queue.queueWith(taskId, configs.webhooksOf(taskId), events),
      });
      return {
        store,
        configs,
        queue,
        stored: async () =>
          database.sqlite.query("SELECT id, task_id, config_id, body FROM push_deliveries ORDER BY id").all() as never,
        failEventsOf: async (taskId) =>
          void database.sqlite.exec(
            `CREATE TRIGGER fail_${taskId} BEFORE INSERT ON task_events WHEN NEW.task_id = '${taskId}' BEGIN SELECT RAISE(ABORT, 'injected disk error'); END`,
          ),
        async close() {
          store.flush();
          database.close();
          rmSync(dir, { recursive: true, force: true });
        },
      };
    },
  ],
  [
    "Postgres (a real server)",
    async () => {
      const database = await emptyPostgres();
      await database.sql`DROP FUNCTION IF EXISTS fail_events() CASCADE`;
      const store = new PostgresTaskStore(database, { log: quiet, pushDeliveries: { replica: "r1", claimMs: 60_000 } });
      return {
        store,
        configs: new PostgresPushConfigStore(database),
        queue: new PostgresDeliveryQueue(database.sql, "r1", 60_000),
        stored: async () =>
          [...(await database.sql`SELECT id, task_id, config_id, body FROM push_deliveries ORDER BY id`)] as never,
        async failEventsOf(taskId) {
          await database.sql.unsafe(`CREATE OR REPLACE FUNCTION fail_events() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN IF NEW.task_id = '${taskId}' THEN RAISE EXCEPTION 'injected disk error'; END IF; RETURN NEW; END $$`);
          await database.sql.unsafe(
            `CREATE TRIGGER fail_events BEFORE INSERT ON task_events FOR EACH ROW EXECUTE FUNCTION fail_events()`,
          );
        },
        async close() {
          await store.flush();
          await database.sql`DROP FUNCTION IF EXISTS fail_events() CASCADE`;
          await database.close();
        },
      };
    },
  ],
];

const event = (taskId: string, n: number): StreamResponse => ({
  statusUpdate: {
    taskId,
    contextId: `c-${taskId}`,
    status: { state: "TASK_STATE_WORKING", timestamp: "2026-01-01T00:00:00.000Z" },
    metadata: { n, text: 'a "quoted" é \u2028 line' },
  },
});

describe.each(stores)("push deliveries queued with their events: %s", (_name, open) => {
  let o: Opened;
  let told: QueuedWithEvent[][];

  beforeEach(async () => {
    o = await open();
    told = [];
    o.store.onDeliveriesQueued!((d) => told.push(d));
  });
  afterEach(async () => {
    await o.close();
  });

  async function task(id: string): Promise<void> {
    const r = await o.store.create({
      id,
      contextId: `c-${id}`,
      owner: "alpha",
      message: { messageId: `m-${id}`, role: "ROLE_USER", parts: [{ text: id }] },
      executor: "echo",
      timestamp: new Date().toISOString(),
    });
    await r.committed;
  }

  it("stores one delivery per event and webhook in the events' commit, in event order, with the event's JSON; tells the listener once committed", async () => {
    await task("t1");
    await task("t2"); // no webhook
    await o.configs.create("alpha", { id: "h1", taskId: "t1", url: "http://127.0.0.1:9/one" });
    await o.configs.create("alpha", { id: "h2", taskId: "t1", url: "http://127.0.0.1:9/two" });
    const first = o.store.record("t1", { events: { firstSeq: 1, items: [event("t1", 1), event("t1", 2)] } });
    const other = o.store.record("t2", { events: { firstSeq: 1, items: [event("t2", 1)] } });
    expect(told).toEqual([]); // nothing before the commit
    await Promise.all([first, other]);
    await o.store.record("t1", { events: { firstSeq: 3, items: [event("t1", 3)] } });

    const rows = await o.stored();
    expect(rows.map((r) => [r.task_id, r.config_id, JSON.parse(r.body).statusUpdate.metadata.n])).toEqual([
      ["t1", "h1", 1],
      ["t1", "h2", 1],
      ["t1", "h1", 2],
      ["t1", "h2", 2],
      ["t1", "h1", 3],
      ["t1", "h2", 3],
    ]);
    for (const r of rows) expect(r.body).toBe(JSON.stringify(event("t1", JSON.parse(r.body).statusUpdate.metadata.n)));
    const all = told.flat();
    expect(all.map((d) => d.id)).toEqual(rows.map((r) => r.id));
    expect(all[0]).toEqual({
      id: rows[0]!.id,
      taskId: "t1",
      configId: "h1",
      owner: "alpha",
      url: "http://127.0.0.1:9/one",
      nextAttemptAt: expect.any(String),
    });
    expect(told).toHaveLength(2); // one call per commit
    expect((await o.queue.load()).map((d) => d.id)).toEqual(rows.map((r) => r.id));
  });

  it("queues nothing for a task whose events cannot be stored; the other tasks of its commit keep theirs", async () => {
    await task("bad");
    await task("good");
    for (const t of ["bad", "good"])
      await o.configs.create("alpha", { id: "h", taskId: t, url: "http://127.0.0.1:9/hook" });
    await o.failEventsOf("bad");
    const bad = o.store.record("bad", { events: { firstSeq: 1, items: [event("bad", 1)] } });
    const good = o.store.record("good", { events: { firstSeq: 1, items: [event("good", 1)] } });
    await expect(bad).rejects.toThrow(/injected disk error/);
    await good;
    const rows = await o.stored();
    expect(rows.map((r) => r.task_id)).toEqual(["good"]);
    expect(told.flat().map((d) => d.id)).toEqual(rows.map((r) => r.id));
  });

  it("are queued with the events of a group too large for one statement (Postgres writes it as a transaction of several)", async () => {
    const ids = Array.from({ length: 2_001 }, (_, i) => `big-${String(i).padStart(4, "0")}`);
    await Promise.all(ids.map(task));
    await o.configs.create("alpha", { id: "h", taskId: "big-1000", url: "http://127.0.0.1:9/hook" });
    await Promise.all(
      ids.map((id) => o.store.record(id, { events: { firstSeq: 1, items: [event(id, 1), event(id, 2)] } })),
    );
    const rows = await o.stored();
    expect(rows.map((r) => [r.task_id, JSON.parse(r.body).statusUpdate.metadata.n])).toEqual([
      ["big-1000", 1],
      ["big-1000", 2],
    ]);
    expect(told.flat().map((d) => d.id)).toEqual(rows.map((r) => r.id));
  });

  it("are sent by a dispatcher in order, once each", async () => {
    const receiver = new Receiver();
    const dispatcher = new PushDispatcher(o.queue, o.configs, { backoffBaseMs: 1, log: quiet });
    try {
      o.store.onDeliveriesQueued!((d) => dispatcher.scheduleQueued(d));
      await task("t1");
      await o.configs.create("alpha", { id: "h", taskId: "t1", url: receiver.url() });
      // Queued before the dispatcher starts: its start loads them; what comes after is scheduled as told.
      await o.store.record("t1", { events: { firstSeq: 1, items: [event("t1", 1), event("t1", 2)] } });
      await dispatcher.start();
      for (let n = 3; n <= 5; n++) await o.store.record("t1", { events: { firstSeq: n, items: [event("t1", n)] } });
      await receiver.delivered(5);
      await dispatcher.idle();
      expect(receiver.ok().map((r) => JSON.parse(r.body).statusUpdate.metadata.n)).toEqual([1, 2, 3, 4, 5]);
      expect(receiver.requests).toHaveLength(5);
      expect(await o.stored()).toEqual([]);
    } finally {
      await dispatcher.stop();
      receiver.stop();
    }
  });
});
