/**
 * A crash between two writes loses no delivery (issue 20). The compiled node, on SQLite and on Postgres, is
 * killed (SIGKILL, by the documented debug setting A2A_NODE_CRASH_AT=event-committed) at the exact moment a
 * commit that stored a task's events has committed and nothing else has happened: no subscriber, no push
 * dispatcher, no caller told. Started again, it delivers every event the task has on disk to the task's
 * webhook. Before the fix an event's deliveries were queued only after its commit, by the dispatcher, so a crash
 * there left events on disk that no webhook would ever hear of.
 */
import { afterAll, beforeAll, describe, expect, it, onTestFailed } from "vitest";
import { serveBinary, type ServedBinary } from "../helpers/binary";
import { makeFleet, type Fleet, type TlsIdentity } from "../helpers/fleet";
import { freshDatabase, type TestDatabase } from "../helpers/postgres";
import { rpc, userMessage } from "../helpers/rpc";
import { openSse } from "../helpers/sse";
import { Receiver } from "../fakes/webhook-receiver";

/** How long the deliveries may take once the node is back (a liveness bound, not a speed). */
const BOUND_MS = 30_000;

let fleet: Fleet;
let alpha: TlsIdentity;
let db: TestDatabase;
const nodes: ServedBinary[] = [];

beforeAll(async () => {
  [fleet, db] = await Promise.all([makeFleet(["sqlite", "pg", "alpha"]), freshDatabase("pushcrash")]);
  alpha = fleet.identity("alpha");
});

afterAll(async () => {
  await Promise.all(nodes.map((n) => n.stop("SIGKILL").catch(() => undefined)));
  fleet?.cleanup();
  await db?.drop();
});

function within<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<never>(
    (_, reject) => (timer = setTimeout(() => reject(new Error(`not within ${ms} ms: ${what}`)), ms)),
  );
  return Promise.race([p, late]).finally(() => clearTimeout(timer));
}

describe.each([
  { store: "SQLite", home: "sqlite", args: [] as string[] },
  { store: "Postgres", home: "pg", args: ["--lease", "1"] },
])("killed right after an event's commit ($store)", ({ store, home, args }) => {
  it("delivers every event the task has on disk to its webhook once started again", async () => {
    const receiver = new Receiver();
    try {
      const all = [
        "--executor",
        "echo",
        "--push-allow",
        "127.0.0.1",
        ...args,
        ...(store === "Postgres" ? ["--database", db.url] : []),
      ];
      const crashing = await serveBinary(fleet.homes[home]!, all, { A2A_NODE_CRASH_AT: "event-committed" });
      nodes.push(crashing);
      onTestFailed(() => console.log(`--- crashed node\n${crashing.log()}${crashing.stderr()}`));
      const text = `pushed through a crash ${crypto.randomUUID()}`;
      const push = { url: receiver.url("/hook"), token: "tok-crash" };
      // The caller may hear nothing: the node dies before it answers (SQLite commits the task and its events together).
      const sent = rpc(crashing.url, alpha, "SendMessage", {
        message: userMessage(text),
        configuration: { taskPushNotificationConfig: push },
      }).catch((err: Error) => err);
      expect(await crashing.exited).not.toBe(0);
      await sent;
      const delivered = receiver.ok().length; // sent before it died (none, as it died at once)

      const node = await serveBinary(fleet.homes[home]!, all);
      nodes.push(node);
      onTestFailed(() => console.log(`--- node started again\n${node.log()}${node.stderr()}`));
      const listed = await rpc(node.url, alpha, "ListTasks", {});
      const task = listed.body.result.tasks.find(
        (t: { history?: { parts: { text?: string }[] }[] }) => t.history?.[0]?.parts[0]?.text === text,
      );
      expect(task, listed.text).toBeDefined();
      // Every event the task has (to its end: a task the crash interrupted is run again), as stored.
      const stored = (
        await (await openSse(node.url, alpha, "SubscribeToTask", { id: task.id }, { "last-event-id": "0" })).rest()
      ).filter((e) => e.id !== undefined);
      expect(stored.length).toBeGreaterThan(0);
      expect(stored.at(-1)!.data.result.statusUpdate?.status.state).toBe("TASK_STATE_COMPLETED");

      await within(
        receiver.delivered(delivered + stored.length),
        BOUND_MS,
        `${stored.length} deliveries of the task's stored events`,
      );
      const bodies = receiver.ok().map((r) => JSON.parse(r.body));
      for (const e of stored) expect(bodies).toContainEqual(e.data.result);
      // In the order the events were stored (at least once: a delivery may repeat, never come before its predecessor).
      const firsts = stored.map((e) => bodies.findIndex((b) => JSON.stringify(b) === JSON.stringify(e.data.result)));
      expect(firsts).toEqual([...firsts].sort((a, b) => a - b));
      for (const r of receiver.ok()) expect(r.headers["x-a2a-notification-token"]).toBe("tok-crash");
    } finally {
      receiver.stop();
    }
  }, 90_000);
});
