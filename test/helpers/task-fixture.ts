import { join } from "node:path";
import type { AgentExecutor } from "../../src/executors/executor";
import { DefaultRequestHandler, type RequestHandlerOptions } from "../../src/rpc/request-handler";
import { openDatabase, type OpenDatabase } from "../../src/store/database";
import { SqliteTaskStore, type SqliteTaskStoreOptions } from "../../src/store/sqlite-task-store";
import { TaskRunner, type TaskRunnerOptions } from "../../src/tasks/task-runner";
import type { TaskStore } from "../../src/tasks/task-store";
import { tempDir } from "./temp-dir";

/**
 * The store + runner + handler wiring most task and RPC tests need, written once (issue 21). Before this, each test
 * file built its own SQLite database in a temp folder, a SqliteTaskStore over it, a TaskRunner over that and a
 * DefaultRequestHandler over both, and closed the database itself: the same lines, copied and drifting apart.
 * Files whose subject is that wiring itself (a store of their own, a runner shared by replicas, ...) still build
 * it by hand; everything else asks for it here, saying only what differs (the executor, the runner's limits, the
 * handler's options). The temp folder is removed when the test file ends (see temp-dir.ts).
 */

/** The runner's limits when a test does not say: room enough that no admission limit is what a test meets. */
export const FIXTURE_RUNNER_OPTIONS: TaskRunnerOptions = { maxConcurrent: 4, maxQueued: 100, historyMessages: 5 };

export interface TaskFixtureOptions {
  executor: AgentExecutor;
  /** The store's options (its logger, its page budget); only used when the fixture makes the SQLite store. */
  storeOptions?: SqliteTaskStoreOptions;
  /** A store the caller made (and will close) instead of a new SQLite one in a temp folder. */
  store?: TaskStore;
  /** The runner's options; default FIXTURE_RUNNER_OPTIONS. */
  runnerOptions?: TaskRunnerOptions;
  /** The handler's options, or a function making them from the fixture's database (for stores kept beside it). */
  handlerOptions?: RequestHandlerOptions | ((database: OpenDatabase | undefined) => RequestHandlerOptions);
  /** The temp folder's name prefix. */
  prefix?: string;
}

export interface TaskFixture<S extends TaskStore = TaskStore> {
  /** The temp folder holding the database, when the fixture made the store. */
  dir: string | undefined;
  /** The SQLite database under the store, when the fixture made it. */
  database: OpenDatabase | undefined;
  store: S;
  runner: TaskRunner;
  handler: DefaultRequestHandler;
  /** Closes the database the fixture opened (a store given by the caller is the caller's to close). */
  close(): void;
}

export interface SqliteTaskStoreFixture {
  /** The temp folder holding the database (removed when the test file ends). */
  dir: string;
  database: OpenDatabase;
  store: SqliteTaskStore;
  /** Closes the database. */
  close(): void;
}

/**
 * Just the store half: a fresh SQLite database in a temp folder named `<prefix>XXXXXX` and a SqliteTaskStore over
 * it, for files that make the store once per test and a runner and handler over it per test (taskFixture with
 * `store`).
 */
export function sqliteTaskStore(
  prefix = "a2a-fixture-",
  storeOptions?: SqliteTaskStoreOptions,
): SqliteTaskStoreFixture {
  const dir = tempDir(prefix);
  const database = openDatabase(join(dir, "db.sqlite"));
  const store = new SqliteTaskStore(database, storeOptions);
  return { dir, database, store, close: () => database.close() };
}

/** A fixture whose store is the SQLite one it made: its folder and database are there. */
export type SqliteTaskFixture = TaskFixture<SqliteTaskStore> & { dir: string; database: OpenDatabase };

/** A fresh SQLite store in a temp folder, a runner with `executor` over it, and a handler over both. */
export function taskFixture(options: TaskFixtureOptions & { store?: undefined }): SqliteTaskFixture;
/** A runner with `executor` over the given store, and a handler over both. */
export function taskFixture<S extends TaskStore>(options: TaskFixtureOptions & { store: S }): TaskFixture<S>;
export function taskFixture(options: TaskFixtureOptions): TaskFixture {
  let dir: string | undefined;
  let database: OpenDatabase | undefined;
  let store = options.store;
  if (!store) ({ dir, database, store } = sqliteTaskStore(options.prefix, options.storeOptions));
  const runner = new TaskRunner(store, options.executor, options.runnerOptions ?? FIXTURE_RUNNER_OPTIONS);
  const handlerOptions =
    typeof options.handlerOptions === "function" ? options.handlerOptions(database) : options.handlerOptions;
  const handler = new DefaultRequestHandler(store, runner, handlerOptions);
  return {
    dir,
    database,
    store,
    runner,
    handler,
    close() {
      database?.close();
    },
  };
}
