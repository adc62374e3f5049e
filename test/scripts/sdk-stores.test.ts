/**
 * The bench's durable @a2a-js/sdk stores (scripts/bench/sdk-stores.ts) hold what the SDK stores: its own
 * DatabaseTaskStore on a real SQLite file through Kysely over bun:sqlite, and on the run's Postgres server through
 * `pg`, each schema made by the SDK's own migrations. A task saved is loaded back and listed, scoped by caller.
 */
import { afterAll, describe, expect, it } from "vitest";
import { join } from "node:path";
import { Database } from "bun:sqlite";
import { TaskState, type Task } from "@a2a-js/sdk";
import { ServerCallContext } from "@a2a-js/sdk/server";
import { openSdkStore, type SdkStore } from "../../scripts/bench/sdk-stores";
import { freshDatabase, type TestDatabase } from "../helpers/postgres";
import { tempDir } from "../helpers/temp-dir";

const alice = new ServerCallContext({ user: { isAuthenticated: true, userName: "alice" } });
const bob = new ServerCallContext({ user: { isAuthenticated: true, userName: "bob" } });

function task(id: string, state: TaskState): Task {
  return {
    id,
    contextId: `ctx-${id}`,
    status: { state, message: undefined, timestamp: new Date().toISOString() },
    artifacts: [
      {
        artifactId: `${id}-echo`,
        name: "echo",
        description: "",
        parts: [{ content: { $case: "text", value: `echo ${id}` }, metadata: undefined, filename: "", mediaType: "" }],
        metadata: undefined,
        extensions: [],
      },
    ],
    history: [],
    metadata: undefined,
  };
}

async function roundTrip(opened: SdkStore): Promise<void> {
  const { store } = opened;
  await store.save(task("t1", TaskState.TASK_STATE_SUBMITTED), alice);
  await store.save(task("t1", TaskState.TASK_STATE_COMPLETED), alice); // the upsert the SDK does per event
  const loaded = await store.load("t1", alice);
  expect(loaded?.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
  expect(loaded?.artifacts[0]?.parts[0]?.content).toEqual({ $case: "text", value: "echo t1" });
  expect(await store.load("t1", bob)).toBeUndefined();
  const listed = await store.list({ tenant: "", contextId: "", pageSize: 10, pageToken: "" } as never, alice);
  expect(listed.tasks.map((t) => t.id)).toEqual(["t1"]);
  expect(listed.totalSize).toBe(1);
  await opened.close();
}

describe("the bench's @a2a-js/sdk stores", () => {
  it("SQLite: DatabaseTaskStore over bun:sqlite, in WAL mode", async () => {
    const path = join(tempDir("a2a-sdk-store-"), "sdk.db");
    await roundTrip(await openSdkStore(`sqlite:${path}`, "FULL"));
    const db = new Database(path, { readonly: true });
    try {
      expect((db.query("PRAGMA journal_mode").get() as { journal_mode: string }).journal_mode).toBe("wal");
      // The SDK's migrations made its table and kept their ledger.
      expect(db.query("SELECT name FROM a2a_tasks_migrations").all()).toEqual([{ name: "0001_create_tasks" }]);
    } finally {
      db.close();
    }
  });

  describe("Postgres", () => {
    let database: TestDatabase | undefined;
    afterAll(async () => {
      await database?.drop();
    });
    it("DatabaseTaskStore through pg, on a database the SDK's migrations made", async () => {
      database = await freshDatabase("sdk");
      await roundTrip(await openSdkStore(database.url, "NORMAL"));
    });
  });

  it("refuses a store it does not know, naming the ones it does", async () => {
    await expect(openSdkStore("mysql://x", "NORMAL")).rejects.toThrow(
      "unknown store 'mysql://x' (use memory, postgres://… or sqlite:FILE)",
    );
  });
});
