/**
 * A SQLite write that fails strands no task (issue 20): the compiled node on a real SQLite home, a task
 * streaming from the model when the disk starts failing its writes. The fault is injected deterministically
 * from a second connection to the home's file, as triggers that RAISE on the writes a disk error would fail
 * (every change of a task's row, every event), while the node runs. Nothing of the task can be stored then,
 * not even FAILED: the node says so in its log and in /health/ready, never runs the task meanwhile, and once the
 * disk takes writes again (the triggers dropped) the task is taken up as after a restart and ends once, its
 * events gapless, with the node ready again, all without a restart. Before the fix the task stayed WORKING
 * until the next start of the node, with "task finished, state failed" logged.
 */
import { afterAll, beforeAll, describe, expect, it, onTestFailed } from "vitest";
import { Database } from "bun:sqlite";
import { join } from "node:path";
import { serveBinary, type ServedBinary } from "../helpers/binary";
import { makeFleet, type Fleet, type TlsIdentity } from "../helpers/fleet";
import { startGatedModel, type GatedModel } from "../fakes/gated-model";
import { get, userMessage } from "../helpers/rpc";
import { openSse } from "../helpers/sse";

let fleet: Fleet;
let alpha: TlsIdentity;
let model: GatedModel;
let node: ServedBinary;
let freed = false;

beforeAll(async () => {
  fleet = await makeFleet(["beta", "alpha"]);
  alpha = fleet.identity("alpha");
  model = startGatedModel({
    holdIf: (t) => t.includes("[hold]") && !freed,
    holdAfterChunks: 1,
    reply: (t) => `one two three four: ${t}`,
  });
  node = await serveBinary(fleet.homes.beta!, ["--executor", "openai", "--model-url", model.url]);
});

afterAll(async () => {
  await node?.stop("SIGKILL");
  model?.stop();
  fleet?.cleanup();
});

/** The home's database, opened beside the node as another process would (a sqlite3 shell, a backup tool). */
function beside(): Database {
  const db = new Database(join(fleet.homes.beta!, "a2a-node.db"));
  db.exec("PRAGMA busy_timeout = 5000");
  return db;
}

const TERMINAL = ["TASK_STATE_COMPLETED", "TASK_STATE_FAILED", "TASK_STATE_CANCELED", "TASK_STATE_REJECTED"];

describe("a disk that fails the node's writes while a task streams", () => {
  it("leaves the task as stored, says so in the log and /health/ready, and takes it up once the disk takes writes: one outcome, gapless events", async () => {
    onTestFailed(() => console.log(`--- node log\n${node.log()}${node.stderr()}`));
    const stream = await openSse(node.url, alpha, "SendStreamingMessage", {
      message: userMessage(`[hold] ${crypto.randomUUID()}`),
    });
    let id: string | undefined;
    for (;;) {
      const r = (await stream.next())?.data.result;
      if (!r) throw new Error("the stream ended before the first word");
      id ??= r.task?.id;
      if (r.artifactUpdate) break; // the first word is stored
    }

    const db = beside();
    try {
      db.exec(`CREATE TRIGGER fault_tasks BEFORE UPDATE ON tasks BEGIN SELECT RAISE(ABORT, 'injected disk I/O error'); END;
               CREATE TRIGGER fault_events BEFORE INSERT ON task_events BEGIN SELECT RAISE(ABORT, 'injected disk I/O error'); END;`);
      freed = true;
      model.release("[hold]");
      const stranded = await node.waitForLine({
        msg: /^could not store a task's outcome; it is taken up again/,
        task_id: id,
      });
      expect(stranded.reason).toBe("injected disk I/O error");
      const rest = await stream.settle();
      const last = rest.events.at(-1)?.data;
      expect(last?.error?.code, JSON.stringify(last)).toBe(-32603);
      expect(last.error.message).toMatch(
        new RegExp(`could not store task ${id} \\(injected disk I/O error\\); it is taken up again`),
      );

      const ready = await get(`${node.url}/health/ready`, alpha);
      expect(ready.status, ready.text).toBe(503);
      expect(ready.body.checks.database.ok).toBe(false);
      expect(ready.body.checks.database.detail).toMatch(
        /committed; but 1 task could not be stored \(injected disk I\/O error\)/,
      );
      const row = () =>
        db.query("SELECT state, metadata FROM tasks WHERE id = ?1").get(id!) as {
          state: string;
          metadata: string | null;
        };
      expect(row().state).toBe("TASK_STATE_WORKING"); // as last stored, held by nothing
      // not run again while writes fail
      expect(model.requests.filter((r) => r.text.includes("[hold]"))).toHaveLength(1);

      db.exec("DROP TRIGGER fault_tasks; DROP TRIGGER fault_events;"); // the disk takes writes again
      const finished = await node.waitForLine({ msg: "task finished", task_id: id });
      expect(finished.state).toBe("completed");
      expect(row().state).toBe("TASK_STATE_COMPLETED");
      expect(JSON.parse(row().metadata ?? "{}")["a2a-node/restarts"]).toBe(1);
      expect(node.lines().filter((l) => l.msg === "task finished" && l.task_id === id)).toHaveLength(1);
    } finally {
      db.close();
    }

    const replay = await (await openSse(node.url, alpha, "SubscribeToTask", { id }, { "last-event-id": "0" })).rest();
    const numbered = replay.filter((e) => e.id !== undefined);
    expect(numbered.map((e) => Number(e.id))).toEqual(numbered.map((_, i) => i + 1));
    const states = numbered
      .map((e) => e.data.result.statusUpdate?.status.state)
      .filter((s): s is string => s !== undefined);
    expect(states.filter((s) => TERMINAL.includes(s))).toEqual(["TASK_STATE_COMPLETED"]);
    expect(states.at(-1)).toBe("TASK_STATE_COMPLETED");
    const ready = await get(`${node.url}/health/ready`, alpha);
    expect(ready.body.checks.database).toMatchObject({ ok: true, detail: expect.stringMatching(/committed$/) });
  }, 60_000);
});
