/** The PushConfigStore contract (push-config-store-contract.ts) run against every implementation. */
import { join } from "node:path";
import { openDatabase } from "../../src/store/database";
import { MemoryPushConfigStore } from "../../src/store/memory-push-config-store";
import { SqlitePushConfigStore } from "../../src/store/sqlite-push-config-store";
import { PostgresPushConfigStore } from "../../src/store/postgres/postgres-push-config-store";
import { emptyPostgres } from "../helpers/postgres-stores";
import { pushConfigStoreContract } from "./push-config-store-contract";
import { tempDir } from "../helpers/temp-dir";

pushConfigStoreContract("in memory", () => ({ store: new MemoryPushConfigStore(), close: () => {} }));

pushConfigStoreContract("SQLite (a real file)", () => {
  const dir = tempDir("a2a-push-contract-");
  const database = openDatabase(join(dir, "a2a-node.db"));
  return {
    store: new SqlitePushConfigStore(database),
    close() {
      database.close();
    },
  };
});

pushConfigStoreContract("Postgres (a real server)", async () => {
  const database = await emptyPostgres();
  return { store: new PostgresPushConfigStore(database), close: () => database.close() };
});
