/**
 * The WAL stays bounded under a sustained write flood, on a real SQLite file opened as the daemon opens it
 * (background checkpoints on): 120 MiB of task data written as fast as the store takes it, the WAL file's
 * size read after every commit (the event, not a timer), never over WAL_CAP_BYTES; and every task is there.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { existsSync, statSync } from "node:fs";
import { join } from "node:path";
import { createLogger } from "../../src/log";
import { openDatabase, WAL_CAP_BYTES, WAL_CHECKPOINT_BYTES, type OpenDatabase } from "../../src/store/database";
import { SqliteTaskStore } from "../../src/store/sqlite-task-store";
import { finishTask } from "../helpers/store-writes";
import { tempDir } from "../helpers/temp-dir";

let dir: string;
let database: OpenDatabase;
let store: SqliteTaskStore;
beforeEach(() => {
  dir = tempDir("a2a-wal-");
  database = openDatabase(join(dir, "a2a-node.db"), { backgroundCheckpoints: true });
  store = new SqliteTaskStore(database, { log: createLogger(() => {}) });
});
afterEach(() => {
  database.close();
});

const now = () => new Date().toISOString();
const walSize = () => (existsSync(join(dir, "a2a-node.db-wal")) ? statSync(join(dir, "a2a-node.db-wal")).size : 0);

describe("the WAL under a write flood", () => {
  it(`never grows past ${WAL_CAP_BYTES / 1024 / 1024} MiB, and every task written is stored`, async () => {
    const text = "x".repeat(60 * 1024);
    const perTurn = 40;
    const turns = 50; // 2,000 tasks, each created then finished with a 60 KiB artifact: ~120 MiB of writes
    let peak = 0;
    let checkpointed = false;
    for (let t = 0; t < turns; t++) {
      const writes: Promise<void>[] = [];
      for (let i = 0; i < perTurn; i++) {
        const id = `t-${t}-${i}`;
        writes.push(
          (
            await store.create({
              id,
              contextId: `c-${id}`,
              owner: "alpha",
              message: { messageId: `m-${id}`, role: "ROLE_USER", parts: [{ text: id }] },
              executor: "echo",
              timestamp: now(),
            })
          ).committed,
        );
        writes.push(
          finishTask(store, id, { state: "TASK_STATE_COMPLETED", timestamp: now() }, [
            { artifactId: `a-${id}`, parts: [{ text }] },
          ]),
        );
      }
      await Promise.all(writes);
      const size = walSize();
      if (size < peak) checkpointed = true;
      peak = Math.max(peak, size);
      expect(size).toBeLessThanOrEqual(WAL_CAP_BYTES);
    }
    // The WAL was brought back down while the flood went on (it holds far more than the cap in all).
    expect(checkpointed).toBe(true);
    expect(peak).toBeGreaterThan(WAL_CHECKPOINT_BYTES / 2);
    expect((await store.list("alpha", { pageSize: 1 })).totalSize).toBe(perTurn * turns);
    const last = await store.get(`t-${turns - 1}-${perTurn - 1}`, "alpha");
    expect(last?.status.state).toBe("TASK_STATE_COMPLETED");
    expect(last?.artifacts?.[0]?.parts[0]).toEqual({ text });
  });
});
