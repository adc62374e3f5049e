/**
 * The push delivery queue on the shared Postgres database, with two replicas' dispatchers: each queued event is
 * sent by one replica only; the deliveries of a replica that died are taken up by another once its claims ran
 * out, and sent in their order.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { Logger } from "../../src/log";
import type { StreamResponse } from "../../src/protocol/types";
import { PushDispatcher } from "../../src/push/push-dispatcher";
import type { PostgresDatabase } from "../../src/store/postgres/database";
import { PostgresDeliveryQueue } from "../../src/store/postgres/postgres-delivery-queue";
import { PostgresPushConfigStore } from "../../src/store/postgres/postgres-push-config-store";
import { emptyPostgres } from "../helpers/postgres-stores";
import { Receiver } from "../fakes/webhook-receiver";

let database: PostgresDatabase;
let receiver: Receiver;
let dispatchers: PushDispatcher[];
const quiet: Logger = { info: () => {}, warn: () => {}, error: () => {} };
const event = (n: number): StreamResponse => ({
  statusUpdate: { taskId: "t1", contextId: "c1", status: { state: "TASK_STATE_WORKING" }, metadata: { n } },
});
const sentNumbers = () =>
  receiver
    .ok()
    .map((r) => (JSON.parse(r.body) as { statusUpdate: { metadata: { n: number } } }).statusUpdate.metadata.n);

beforeEach(async () => {
  database = await emptyPostgres(6);
  receiver = new Receiver();
  dispatchers = [];
});
afterEach(async () => {
  await Promise.all(dispatchers.map((d) => d.stop()));
  receiver.stop();
  await database.close();
});

function replica(name: string, claimMs: number) {
  const configs = new PostgresPushConfigStore(database);
  const queue = new PostgresDeliveryQueue(database.sql, name, claimMs);
  const dispatcher = new PushDispatcher(queue, configs, { backoffBaseMs: 1, log: quiet });
  dispatchers.push(dispatcher);
  return { configs, queue, dispatcher };
}

describe("push deliveries on Postgres", () => {
  it("are sent once, by the replica that queued them, while both replicas live", async () => {
    const a = replica("a", 60_000);
    const b = replica("b", 60_000);
    await a.configs.create("alpha", { id: "hook", taskId: "t1", url: receiver.url() });
    await Promise.all([a.dispatcher.start(), b.dispatcher.start()]);
    for (let n = 1; n <= 3; n++) await a.dispatcher.notify("t1", event(n));
    await receiver.delivered(3);
    await a.dispatcher.idle();
    await b.dispatcher.stop();
    await b.dispatcher.start(); // a restart of b finds nothing of a's to send
    await b.dispatcher.idle();
    expect(sentNumbers()).toEqual([1, 2, 3]);
    expect(receiver.requests).toHaveLength(3);
    const [{ n }] = await database.sql`SELECT count(*)::int AS n FROM push_deliveries`;
    expect(n).toBe(0);
  });

  it("queued or renewed together share one claim expiry, so a lane's rows are taken up together", async () => {
    const { queue } = replica("a", 60_000);
    const rows = Array.from({ length: 500 }, (_, i) => ({
      id: `01AAAAAAAAAAAAAAAAAAAA${String(i).padStart(4, "0")}`,
      task_id: "t1",
      config_id: "hook",
      body: "{}",
      next_attempt_at: new Date().toISOString(),
    }));
    const expiries = async () =>
      (await database.sql`SELECT count(DISTINCT claim_expires)::int AS n FROM push_deliveries`)[0].n as number;
    await queue.add(rows);
    expect(await expiries()).toBe(1);
    await queue.renew();
    expect(await expiries()).toBe(1);
    await queue.load();
    expect(await expiries()).toBe(1);
  });

  it("of a replica that died are taken up by another once its claims ran out, and sent in their order", async () => {
    const dead = replica("dead", 1000);
    await dead.configs.create("alpha", { id: "hook", taskId: "t1", url: receiver.url() });
    // The dead replica queued events 1 and 2 and never sent them (it was killed before).
    await dead.queue.add(
      [1, 2].map((n) => ({
        id: `01AAAAAAAAAAAAAAAAAAAAAAA${n}`,
        task_id: "t1",
        config_id: "hook",
        body: JSON.stringify(event(n)),
        next_attempt_at: new Date().toISOString(),
      })),
    );
    const live = replica("live", 200);
    await live.dispatcher.start(); // the dead one's claims are still fresh: nothing of them yet
    await live.dispatcher.notify("t1", event(3));
    await receiver.delivered(3);
    await live.dispatcher.idle();
    // 1 and 2 went out once the dead replica's claims ran out (3, queued by the live one, usually before them),
    // in their own order; each event once.
    expect(sentNumbers().filter((n) => n !== 3)).toEqual([1, 2]);
    expect([...sentNumbers()].sort()).toEqual([1, 2, 3]);
    expect(receiver.requests).toHaveLength(3);
    const claims = await database.sql`SELECT count(*)::int AS n FROM push_deliveries`;
    expect(claims[0].n).toBe(0);
  });
});
