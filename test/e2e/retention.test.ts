/**
 * Retention through the binary: a node started on a database holding tasks that ended long ago deletes them
 * (and their webhooks) in the background, keeps what is recent or still waiting, and says how many it deleted.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { join } from "node:path";
import { serveBinary, type ServedBinary } from "../helpers/binary";
import { makeFleet, type Fleet, type TlsIdentity } from "../helpers/fleet";
import { rpc } from "../helpers/rpc";
import { openDatabase } from "../../src/store/database";
import { SqliteTaskStore } from "../../src/store/sqlite-task-store";
import { SqlitePushConfigStore } from "../../src/store/sqlite-push-config-store";
import { ulidFactory } from "../../src/clock";

const DAY = 86_400_000;
let fleet: Fleet;
let node: ServedBinary;
let alpha: TlsIdentity;
const old: string[] = [];
const kept: string[] = [];

beforeAll(async () => {
  fleet = await makeFleet(["beta", "alpha"]);
  alpha = fleet.identity("alpha");
  // The database as a node that ran for months left it: written by the same store code, before serve starts.
  const database = openDatabase(join(fleet.homes.beta, "a2a-node.db"));
  const store = new SqliteTaskStore(database);
  const pushConfigs = new SqlitePushConfigStore(database);
  const now = Date.now();
  const task = async (daysAgo: number, state: string) => {
    const at = now - daysAgo * DAY;
    const id = ulidFactory(() => at)();
    const created = await store.create({
      id,
      contextId: id,
      owner: "alpha",
      message: { messageId: id, role: "ROLE_USER", parts: [{ text: "old" }] },
      executor: "echo",
      timestamp: new Date(at).toISOString(),
    });
    await created.committed;
    await store.record(id, { status: { state: state as never, timestamp: new Date(at + 1000).toISOString() } });
    return id;
  };
  for (let i = 0; i < 3; i++) old.push(await task(40 + i, "TASK_STATE_COMPLETED"));
  await pushConfigs.create("alpha", { id: "hook", taskId: old[0], url: "https://hooks.example/" });
  kept.push(await task(40, "TASK_STATE_INPUT_REQUIRED"), await task(2, "TASK_STATE_COMPLETED"));
  store.flush();
  database.close();
  node = await serveBinary(fleet.homes.beta, ["--executor", "echo", "--retention-days", "30"]);
});

afterAll(async () => {
  await node?.stop("SIGKILL");
  fleet?.cleanup();
});

describe("retention", () => {
  it("deletes the finished tasks older than retention_days at start, and logs how many", async () => {
    expect(
      await node.waitForLine({ msg: "deleted finished tasks past the retention age", level: "info" }),
    ).toMatchObject({ count: 3 });
    for (const id of old) expect((await rpc(node.url, alpha, "GetTask", { id })).body.error?.code).toBe(-32001);
    for (const id of kept) expect((await rpc(node.url, alpha, "GetTask", { id })).body.result?.id).toBe(id);
    const listed = await rpc(node.url, alpha, "ListTasks", {});
    expect(listed.body.result.tasks.map((t: { id: string }) => t.id).sort()).toEqual([...kept].sort());
  });

  it("forgets the deleted tasks' webhooks too", async () => {
    const database = openDatabase(join(fleet.homes.beta, "a2a-node.db"));
    try {
      expect(await new SqlitePushConfigStore(database).forTask(old[0])).toEqual([]);
    } finally {
      database.close();
    }
  });

  it("refuses a retention that is not a number of days, naming the flag", async () => {
    const { runBinary } = await import("../helpers/binary");
    const r = await runBinary(["--home", fleet.homes.beta, "serve", "--retention-days", "soon", "--check"]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("--retention-days");
  });
});
