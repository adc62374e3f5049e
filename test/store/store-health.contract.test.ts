/** The StoreHealth contract (store-health-contract.ts) run against the SQLite and the Postgres probe. */
import { Database } from "bun:sqlite";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createLogger } from "../../src/log";
import { openDatabase } from "../../src/store/database";
import { PostgresProbe } from "../../src/store/postgres/postgres-probe";
import { PostgresTaskStore } from "../../src/store/postgres/postgres-task-store";
import { SqliteTaskStore } from "../../src/store/sqlite-task-store";
import { SqliteProbe } from "../../src/store/sqlite-probe";
import { emptyPostgres } from "../helpers/postgres-stores";
import { storeHealthContract } from "./store-health-contract";

storeHealthContract("SQLite (a real file, probed by a worker)", () => {
  const dir = mkdtempSync(join(tmpdir(), "a2a-health-contract-"));
  const path = join(dir, "a2a-node.db");
  const database = openDatabase(path);
  const tasks = new SqliteTaskStore(database, { log: createLogger(() => {}) });
  return {
    health: new SqliteProbe(path, 3000),
    tasks,
    where: path,
    async lockOut() {
      const other = new Database(path);
      other.exec("BEGIN IMMEDIATE");
      return async () => {
        other.exec("ROLLBACK");
        other.close();
      };
    },
    close() {
      tasks.flush();
      database.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
});

storeHealthContract("Postgres (a real server)", async () => {
  const database = await emptyPostgres();
  const tasks = new PostgresTaskStore(database, { log: createLogger(() => {}) });
  return {
    health: new PostgresProbe(database.sql, database.display, "replica-a", 500),
    tasks,
    where: database.display,
    async lockOut() {
      const other = await database.sql.reserve();
      await other`BEGIN`;
      await other`LOCK TABLE health_probe IN ACCESS EXCLUSIVE MODE`;
      return async () => {
        await other`ROLLBACK`;
        other.release();
      };
    },
    async close() {
      await tasks.flush();
      await database.close();
    },
  };
});
