/** The TaskStore contract (test/store/task-store-contract.ts) run against every implementation. */
import { join } from "node:path";
import { MemoryTaskStore } from "../../src/store/memory-task-store";
import { openDatabase } from "../../src/store/database";
import { SqliteTaskStore } from "../../src/store/sqlite-task-store";
import { PostgresTaskStore } from "../../src/store/postgres/postgres-task-store";
import { emptyPostgres } from "../helpers/postgres-stores";
import { taskStoreContract } from "./task-store-contract";
import { tempDir } from "../helpers/temp-dir";

taskStoreContract("in memory", () => {
  const store = new MemoryTaskStore();
  return { store, close: () => store.flush() };
});

taskStoreContract("SQLite (a real file)", () => {
  const dir = tempDir("a2a-contract-");
  const database = openDatabase(join(dir, "a2a-node.db"));
  const store = new SqliteTaskStore(database);
  return {
    store,
    close() {
      store.flush();
      database.close();
    },
  };
});

taskStoreContract("Postgres (a real server)", async () => {
  const database = await emptyPostgres();
  const store = new PostgresTaskStore(database);
  return {
    store,
    async close() {
      await store.flush();
      await database.close();
    },
  };
});
