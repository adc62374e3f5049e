/** The DeliveryQueue contract (delivery-queue-contract.ts) run against every implementation. */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openDatabase } from "../../src/store/database";
import { PostgresDeliveryQueue } from "../../src/store/postgres/postgres-delivery-queue";
import { SqliteDeliveryQueue } from "../../src/store/sqlite-delivery-queue";
import { emptyPostgres } from "../helpers/postgres-stores";
import { deliveryQueueContract } from "./delivery-queue-contract";

deliveryQueueContract("SQLite (a real file)", () => {
  const dir = mkdtempSync(join(tmpdir(), "a2a-queue-contract-"));
  const database = openDatabase(join(dir, "a2a-node.db"));
  return {
    queue: new SqliteDeliveryQueue(database),
    close() {
      database.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
});

deliveryQueueContract("Postgres (a real server)", async () => {
  const database = await emptyPostgres();
  return { queue: new PostgresDeliveryQueue(database.sql, "replica-a", 60_000), close: () => database.close() };
});
