import type { Logger } from "../log";
import type { StreamResponse, TaskPushNotificationConfig } from "../protocol/types";
import type { PushConfigStore } from "../push/push-config-store";
import { hostname } from "node:os";
import { newId } from "../clock";
import type { TaskLeases } from "../tasks/leases";
import type { ReplicaMessages } from "../tasks/replica-messages";
import type { TaskStore } from "../tasks/task-store";
import { PostgresLeases } from "./postgres/postgres-leases";
import { PostgresDeliveryQueue } from "./postgres/postgres-delivery-queue";
import { SqliteDeliveryQueue } from "./sqlite-delivery-queue";
import type { DeliveryQueue } from "../push/delivery-queue";
import { openDatabase, type OpenDatabase } from "./database";
import type { Durability } from "./durability";
import { openPostgres, type PostgresDatabase } from "./postgres/database";
import { PostgresPushConfigStore } from "./postgres/postgres-push-config-store";
import { PostgresReplicaMessages } from "./postgres/postgres-replica-messages";
import { PostgresTaskStore } from "./postgres/postgres-task-store";
import { SqlitePushConfigStore } from "./sqlite-push-config-store";
import { SqliteTaskStore } from "./sqlite-task-store";
import { SqliteProbe, type StoreHealth } from "./sqlite-probe";
import { PostgresProbe } from "./postgres/postgres-probe";

/** Where a node keeps its tasks and webhooks. */
export interface Storage {
  tasks: TaskStore;
  pushConfigs: PushConfigStore;
  /** The home's SQLite file: peers, whichever store holds the tasks. */
  local: OpenDatabase;
  /** Where push deliveries wait: the home's SQLite file, or the shared database (claimed per replica). */
  deliveries: DeliveryQueue;
  /** The shared Postgres database, when tasks are kept there. */
  postgres?: PostgresDatabase;
  /** This replica's leases on the tasks it runs, when tasks are kept in Postgres. */
  leases?: TaskLeases;
  /** What the replicas sharing the Postgres database tell each other (none for a node alone on SQLite). */
  replicas?: ReplicaMessages;
  /** GET /health/ready's database check and the tasks-by-state gauge, on the store that holds the tasks. */
  health: StoreHealth;
  /** Where the tasks are, for the log (a Postgres URL without its password). */
  where: string;
  /** Commits what is pending. */
  flush(): Promise<void>;
  /** Commits what is pending and closes every connection. */
  close(): Promise<void>;
}

export interface StorageOptions {
  /** The home's SQLite file. */
  path: string;
  /** postgres://…: keep tasks and webhooks there instead (several replicas share them). */
  databaseUrl?: string;
  maxListBytes: number;
  log: Logger;
  /** With databaseUrl: how long a lease lasts unrenewed (see TaskLeases). */
  leaseMs: number;
  /** What the SQLite file's commits survive (see DURABILITY_LEVELS); Postgres syncs each commit itself. */
  durability?: Durability;
}

/** Opens the node's storage: SQLite alone (the default), or Postgres for tasks and webhooks. */
export async function openStorage(options: StorageOptions): Promise<Storage> {
  const local = openDatabase(options.path, { backgroundCheckpoints: true, durability: options.durability });
  if (!options.databaseUrl) {
    const pushConfigs = new SqlitePushConfigStore(local);
    const deliveries = new SqliteDeliveryQueue(local);
    // An event's push deliveries are queued in the commit that stores it (see TaskStore.onDeliveriesQueued).
    const outbox = (taskId: string, events: StreamResponse[]) =>
      deliveries.queueWith(taskId, pushConfigs.webhooksOf(taskId), events);
    const webhooks = (owner: string, config: TaskPushNotificationConfig) => pushConfigs.storeWithTask(owner, config);
    const tasks = new SqliteTaskStore(local, {
      maxListBytes: options.maxListBytes,
      log: options.log,
      outbox,
      webhooks,
    });
    return {
      tasks,
      pushConfigs,
      local,
      deliveries,
      health: new SqliteProbe(options.path),
      where: options.path,
      async flush() {
        tasks.flush();
      },
      async close() {
        tasks.flush();
        local.close();
      },
    };
  }
  let postgres: PostgresDatabase;
  try {
    postgres = await openPostgres(options.databaseUrl);
  } catch (err) {
    local.close();
    throw err;
  }
  // Unique per process: a restarted replica is another holder, so it never mistakes its old leases for its own.
  const replica = `${hostname()}/${process.pid}/${newId()}`;
  const leases = new PostgresLeases(postgres.sql, replica, options.leaseMs);
  const tasks = new PostgresTaskStore(postgres, {
    maxListBytes: options.maxListBytes,
    log: options.log,
    leases,
    keepWebhooks: true,
    // Claimed as PostgresDeliveryQueue claims what it queues: by this replica, renewed with its claims.
    pushDeliveries: { replica, claimMs: options.leaseMs },
  });
  const replicas = new PostgresReplicaMessages(postgres.sql, leases);
  try {
    await replicas.listen();
  } catch (err) {
    await postgres.close();
    local.close();
    throw new Error(
      `cannot listen for task events on the Postgres database ${postgres.display}: ${(err as Error).message}`,
    );
  }
  return {
    tasks,
    pushConfigs: new PostgresPushConfigStore(postgres),
    local,
    deliveries: new PostgresDeliveryQueue(postgres.sql, replica, options.leaseMs),
    postgres,
    leases,
    replicas,
    health: new PostgresProbe(postgres.sql, postgres.display, replica),
    where: postgres.display,
    flush: () => tasks.flush(),
    async close() {
      await tasks.flush();
      await replicas.unlisten();
      await postgres.close();
      local.close();
    },
  };
}
