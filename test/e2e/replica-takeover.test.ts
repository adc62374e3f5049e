/**
 * Leases across replicas (compiled binaries on one Postgres database, 1 s leases): a live replica keeps the
 * tasks it runs; when replicas die (kill -9) mid-run, a survivor takes their tasks over once the leases run
 * out and runs them again (the openai executor's restart policy), one runner per task at any time.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SQL } from "bun";
import { serveBinary, type ServedBinary } from "../helpers/binary";
import { makeFleet, type Fleet, type TlsIdentity } from "../helpers/fleet";
import { startGatedModel, type GatedModel } from "../fakes/gated-model";
import { freshDatabase, type TestDatabase } from "../helpers/postgres";
import { rpc, userMessage } from "../helpers/rpc";
import { openSse } from "../helpers/sse";
import { untilWithin } from "../helpers/until";

let fleet: Fleet;
let alpha: TlsIdentity;
let db: TestDatabase;
let sql: SQL;
let model: GatedModel;
const replicas: ServedBinary[] = [];
const LEASE_MS = 1000;

beforeAll(async () => {
  fleet = await makeFleet(["r1", "r2", "r3", "alpha"]);
  alpha = fleet.identity("alpha");
  db = await freshDatabase("takeover");
  sql = new SQL(db.url, { max: 2 });
  model = startGatedModel({ holdAfterChunks: 1 }); // a held task has streamed one word when its replica dies
  const args = [
    "--executor",
    "openai",
    "--model-url",
    model.url,
    "--database",
    db.url,
    "--lease",
    String(LEASE_MS / 1000),
  ];
  replicas.push(...(await Promise.all(["r1", "r2", "r3"].map((n) => serveBinary(fleet.homes[n]!, args)))));
});

afterAll(async () => {
  await Promise.all(replicas.map((r) => r.stop("SIGKILL")));
  model?.release();
  model?.stop();
  await sql?.close();
  fleet?.cleanup();
  await db?.drop();
});

async function call(url: string, method: string, params: unknown) {
  const r = await rpc(url, alpha, method, params);
  expect(r.body.error, r.text).toBeUndefined();
  return r.body.result;
}

const leases = async () =>
  [...(await sql`SELECT task_id, replica, expires_at::float8 AS expires_at FROM task_leases ORDER BY task_id`)] as {
    task_id: string;
    replica: string;
    expires_at: number;
  }[];
const requestsFor = (text: string) => model.requests.filter((r) => r.text === text);
/** Requests for the task's text that a replica is still waiting on: at most one runner per task. */
const runningFor = (text: string) => requestsFor(text).filter((r) => !r.wasAborted && !r.answered);

describe("leases across replicas", () => {
  const texts = ["r1", "r2", "r3"].map((r) => `[hold] task on ${r} ${crypto.randomUUID()}`);
  const ids: string[] = [];

  it("a live replica keeps the tasks it runs: renewed, never taken over", async () => {
    for (let i = 0; i < 3; i++) {
      const sent = await call(replicas[i]!.url, "SendMessage", {
        message: userMessage(texts[i]!),
        configuration: { returnImmediately: true },
      });
      ids.push(sent.task.id);
    }
    await model.received(3);
    const first = await leases();
    expect(first.map((l) => l.task_id).sort()).toEqual([...ids].sort());
    expect(new Set(first.map((l) => l.replica)).size).toBe(3); // each task held by the replica that took it
    // Three lease periods of renewals later, nothing changed hands and nothing ran twice.
    const renewedBy = Math.max(...first.map((l) => l.expires_at)) + 3 * LEASE_MS;
    await untilWithin(
      20_000,
      "three lease periods of renewals",
      async () => Math.min(...(await leases()).map((l) => l.expires_at)) >= renewedBy,
    );
    expect((await leases()).map((l) => l.replica)).toEqual(first.map((l) => l.replica));
    expect(model.requests).toHaveLength(3);
  });

  it("after kill -9 of two replicas mid-run, the third takes their tasks over once the leases run out, one runner per task", async () => {
    const survivor = replicas[2]!;
    const before = await leases();
    const survivorName = before.find((l) => l.task_id === ids[2])!.replica;
    for (const r of replicas.slice(0, 2)) await r.stop("SIGKILL");

    await model.received(5); // the two orphaned tasks run again, on the survivor
    for (const i of [0, 1]) {
      expect(requestsFor(texts[i]!)).toHaveLength(2);
      expect(requestsFor(texts[i]!)[0]!.wasAborted).toBe(true); // the dead replica's request
      expect(runningFor(texts[i]!)).toHaveLength(1);
    }
    expect(requestsFor(texts[2]!)).toHaveLength(1);
    await untilWithin(5_000, "every lease held by the survivor", async () =>
      (await leases()).every((l) => l.replica === survivorName),
    );

    for (const t of texts) model.release(t);
    for (let i = 0; i < 3; i++) {
      const events = await (
        await openSse(survivor.url, alpha, "SubscribeToTask", { id: ids[i] }, { "last-event-id": "0" })
      ).rest();
      const numbered = events.filter((e) => e.id !== undefined);
      expect(numbered.map((e) => Number(e.id))).toEqual(numbered.map((_, n) => n + 1)); // no gap, no duplicate
      const terminal = numbered.filter((e) =>
        ["TASK_STATE_COMPLETED", "TASK_STATE_FAILED", "TASK_STATE_CANCELED"].includes(
          e.data.result.statusUpdate?.status.state,
        ),
      );
      expect(terminal.map((e) => e.data.result.statusUpdate.status.state)).toEqual(["TASK_STATE_COMPLETED"]);
      const task = await call(survivor.url, "GetTask", { id: ids[i] });
      expect(task.status.state).toBe("TASK_STATE_COMPLETED");
      expect(task.metadata?.["a2a-node/restarts"]).toBe(i < 2 ? 1 : undefined);
    }
    expect(model.requests).toHaveLength(5); // nothing ran a third time
    expect(await leases()).toEqual([]); // every lease let go as its task ended
  });

  it("on SIGTERM a replica hands its running task over (lets its lease go) instead of failing it; another runs it at once", async () => {
    const args = [
      "--executor",
      "openai",
      "--model-url",
      model.url,
      "--database",
      db.url,
      "--lease",
      String(LEASE_MS / 1000),
    ];
    const leaving = await serveBinary(fleet.homes.r1!, [...args, "--shutdown-grace", "0.2"]);
    replicas.push(leaving);
    const text = `[hold] handed over ${crypto.randomUUID()}`;
    const id = (
      await call(leaving.url, "SendMessage", { message: userMessage(text), configuration: { returnImmediately: true } })
    ).task.id;
    await model.arrival(text);
    expect(await leaving.stop("SIGTERM")).toBe(0);
    await untilWithin(
      10_000,
      "the task running again on the other replica",
      async () => requestsFor(text).length === 2,
    );
    expect(requestsFor(text)[0]!.wasAborted).toBe(true);
    model.release(text);
    const survivor = replicas[2]!;
    const events = await (
      await openSse(survivor.url, alpha, "SubscribeToTask", { id }, { "last-event-id": "0" })
    ).rest();
    expect(events.at(-1)?.data.result.statusUpdate?.status.state).toBe("TASK_STATE_COMPLETED");
    const task = await call(survivor.url, "GetTask", { id });
    expect(task.metadata?.["a2a-node/restarts"]).toBe(1);
    expect(requestsFor(text)).toHaveLength(2);
  });
});
