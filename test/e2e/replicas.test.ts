/**
 * Two compiled-binary replicas of one agent on one Postgres database (two homes from one fleet CA), as behind a
 * load balancer: whichever replica a call reaches answers it. The only fake is the model.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SQL } from "bun";
import { serveBinary, type ServedBinary } from "../helpers/binary";
import { makeFleet, type Fleet, type TlsIdentity } from "../helpers/fleet";
import { startGatedModel, type GatedModel } from "../fakes/gated-model";
import { freshDatabase, type TestDatabase } from "../helpers/postgres";
import { rpc, userMessage } from "../helpers/rpc";
import { openSse, type SseEvent } from "../helpers/sse";

let fleet: Fleet;
let alpha: TlsIdentity;
let bravo: TlsIdentity;
let db: TestDatabase;
let model: GatedModel;
let r1: ServedBinary;
let r2: ServedBinary;

beforeAll(async () => {
  fleet = await makeFleet(["r1", "r2", "alpha", "bravo"]);
  alpha = fleet.identity("alpha");
  bravo = fleet.identity("bravo");
  db = await freshDatabase("replicas");
  // Held requests stream two words, then wait for the test: a task is mid-run on the replica that took it.
  model = startGatedModel({ holdAfterChunks: 2, reply: (t) => `one two three four five six: ${t}` });
  const args = ["--executor", "openai", "--model-url", model.url, "--database", db.url];
  [r1, r2] = await Promise.all([serveBinary(fleet.homes.r1, args), serveBinary(fleet.homes.r2, args)]);
});

afterAll(async () => {
  await Promise.all([r1?.stop("SIGKILL"), r2?.stop("SIGKILL")]);
  model?.stop();
  fleet?.cleanup();
  await db?.drop();
});

async function call(url: string, who: TlsIdentity, method: string, params: unknown) {
  const r = await rpc(url, who, method, params);
  expect(r.body.error, r.text).toBeUndefined();
  return r.body.result;
}

/** The id'd events: ids consecutive from `from`, none repeated. */
function expectConsecutive(events: SseEvent[], from: number): number[] {
  const ids = events.filter((e) => e.id !== undefined).map((e) => Number(e.id));
  expect(ids).toEqual(ids.map((_, i) => from + i));
  return ids;
}

const finalState = (events: SseEvent[]) => events.at(-1)?.data.result.statusUpdate?.status.state;

describe("replicas on one database", () => {
  it("any replica answers GetTask and ListTasks for a task another ran, scoped to its caller", async () => {
    const task = (await call(r1.url, alpha, "SendMessage", { message: userMessage("ran on r1") })).task;
    expect(task.status.state).toBe("TASK_STATE_COMPLETED");
    const got = await call(r2.url, alpha, "GetTask", { id: task.id });
    expect(got).toEqual(task);
    const listed = await call(r2.url, alpha, "ListTasks", { includeArtifacts: true });
    expect(listed.tasks.map((t: { id: string }) => t.id)).toContain(task.id);
    // Another caller sees nothing of it, on either replica.
    for (const node of [r1, r2]) {
      expect((await rpc(node.url, bravo, "GetTask", { id: task.id })).body.error?.code).toBe(-32001);
      expect((await call(node.url, bravo, "ListTasks", {})).tasks).toEqual([]);
    }
  });

  it("a message sent to both replicas at once (same messageId) makes one task, and both answer with it", async () => {
    const message = userMessage("the same message, twice");
    const [a, b] = await Promise.all([
      call(r1.url, alpha, "SendMessage", { message, configuration: { returnImmediately: true } }),
      call(r2.url, alpha, "SendMessage", { message, configuration: { returnImmediately: true } }),
    ]);
    expect(a.task.id).toBe(b.task.id);
    const sql = new SQL(db.url, { max: 1 });
    try {
      const rows = await sql`SELECT id FROM tasks WHERE owner = 'alpha' AND request_message_id = ${message.messageId}`;
      expect(rows.map((r: { id: string }) => r.id)).toEqual([a.task.id]);
    } finally {
      await sql.close();
    }
    // Another caller's message with that messageId is its own task.
    const other = await call(r2.url, bravo, "SendMessage", { message, configuration: { returnImmediately: true } });
    expect(other.task.id).not.toBe(a.task.id);
  });

  it("SubscribeToTask on one replica follows, live and in order, a task running on the other; Last-Event-ID replays there too", async () => {
    const text = `[hold] streamed on r1 ${crypto.randomUUID()}`;
    const task = (
      await call(r1.url, alpha, "SendMessage", {
        message: userMessage(text),
        configuration: { returnImmediately: true },
      })
    ).task;
    await model.chunks(text, 2); // r1 is mid-run: two words streamed, the rest held

    // Another caller cannot follow it, on either replica.
    for (const node of [r1, r2])
      expect((await rpc(node.url, bravo, "SubscribeToTask", { id: task.id })).body.error?.code).toBe(-32001);
    const live = await openSse(r2.url, alpha, "SubscribeToTask", { id: task.id });
    expect(live.status).toBe(200);
    const first = await live.next();
    expect(first?.data.result.task.id).toBe(task.id);
    // A reconnect to r2 that saw event 1 only.
    const resumed = await openSse(r2.url, alpha, "SubscribeToTask", { id: task.id }, { "last-event-id": "1" });
    expect((await resumed.next())?.data.result.task.id).toBe(task.id);

    model.release(text);
    const liveEvents = await live.rest();
    const resumedEvents = await resumed.rest();
    expect(finalState(liveEvents)).toBe("TASK_STATE_COMPLETED");
    expect(finalState(resumedEvents)).toBe("TASK_STATE_COMPLETED");

    // The whole log, read afterwards from r1 (which ran it): what r2 streamed is exactly its tail, in order.
    const all = (
      await (await openSse(r1.url, alpha, "SubscribeToTask", { id: task.id }, { "last-event-id": "0" })).rest()
    ).slice(1);
    const allIds = expectConsecutive(all, 1);
    // r2's stream goes on from what its first item (the stored task) reflects, and has every event since.
    const liveIds = expectConsecutive(liveEvents, Number(liveEvents[0]?.id));
    expect(liveIds.at(-1)).toBe(allIds.at(-1));
    expect(liveEvents.map((e) => e.data.result)).toEqual(
      all.slice(all.length - liveEvents.length).map((e) => e.data.result),
    );
    expectConsecutive(resumedEvents, 2);
    expect(resumedEvents.map((e) => e.data.result)).toEqual(all.slice(1).map((e) => e.data.result));
    // And the artifact r2 streamed is the model's whole answer.
    const got = await call(r2.url, alpha, "GetTask", { id: task.id });
    expect(got.artifacts[0].parts[0].text).toBe(`one two three four five six: ${text}`);
  });

  it("CancelTask on one replica stops a task running on the other, which records it CANCELED once", async () => {
    const text = `[hold] canceled from r2 ${crypto.randomUUID()}`;
    const task = (
      await call(r1.url, alpha, "SendMessage", {
        message: userMessage(text),
        configuration: { returnImmediately: true },
      })
    ).task;
    const request = await model.arrival(text);
    expect((await rpc(r2.url, bravo, "CancelTask", { id: task.id })).body.error?.code).toBe(-32001); // not bravo's
    const canceled = await call(r2.url, alpha, "CancelTask", { id: task.id });
    expect(canceled.status.state).toBe("TASK_STATE_CANCELED");
    expect(canceled.status.message.parts[0].text).toBe("canceled by alpha");
    await request.aborted; // r1 stopped the model request
    const log = (
      await (await openSse(r2.url, alpha, "SubscribeToTask", { id: task.id }, { "last-event-id": "0" })).rest()
    ).slice(1);
    expectConsecutive(log, 1);
    expect(log.filter((e) => e.data.result.statusUpdate?.status.state === "TASK_STATE_CANCELED")).toHaveLength(1);
    expect(finalState(log)).toBe("TASK_STATE_CANCELED");
    // ended: not cancelable
    expect((await rpc(r1.url, alpha, "CancelTask", { id: task.id })).body.error?.code).toBe(-32002);
  });

  it("SubscribeToTask on the other replica with Last-Event-ID after the task ended replays and closes", async () => {
    const task = (await call(r1.url, alpha, "SendMessage", { message: userMessage("done before anyone subscribed") }))
      .task;
    const events = await (
      await openSse(r2.url, alpha, "SubscribeToTask", { id: task.id }, { "last-event-id": "0" })
    ).rest();
    expect(events[0]?.data.result.task.id).toBe(task.id);
    expectConsecutive(events.slice(1), 1);
    expect(finalState(events)).toBe("TASK_STATE_COMPLETED");
  });
});
