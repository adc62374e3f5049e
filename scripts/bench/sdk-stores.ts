/**
 * The task stores the @a2a-js/sdk bench server can run on: its InMemoryTaskStore, or its own durable
 * DatabaseTaskStore (`@a2a-js/sdk/server/database`, Kysely) on Postgres (the `pg` driver, as the SDK's `a2a-db`
 * CLI connects) or on SQLite.
 *
 * SQLite: the SDK's CLI opens SQLite through better-sqlite3, a native module that needs a prebuilt binary
 * downloaded at install (or a compiler). Here it runs on Kysely's own SqliteDialect over `bun:sqlite` instead
 * (the small adapter below: Kysely asks a SQLite database for prepare/all/run/iterate, which bun:sqlite has),
 * so nothing is downloaded. The tables come from the SDK's own migrations in both cases: `a2a-db upgrade` online
 * for Postgres; for SQLite the SQL `a2a-db upgrade --sql --dialect sqlite` renders (its path for databases it
 * cannot connect to, such as Cloudflare D1), run on the file.
 */
import { Database } from "bun:sqlite";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { Kysely, PostgresDialect, SqliteDialect, type SqliteDatabase } from "kysely";
import pg from "pg";
import { InMemoryTaskStore, type TaskStore } from "@a2a-js/sdk/server";
import { DatabaseTaskStore } from "@a2a-js/sdk/server/database";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const A2A_DB = join(ROOT, "node_modules", "@a2a-js", "sdk", "dist", "cli", "a2a_db.js");

/** a2a-node's own Postgres pool size (src/store/postgres/database.ts), so both get the same connections. */
const POOL_SIZE = 10;

export interface SdkStore {
  store: TaskStore;
  /** Closes its connections (none for memory). */
  close(): Promise<void>;
}

/**
 * `memory`, `postgres://…`, or `sqlite:FILE` (with `synchronous`: NORMAL, a2a-node's default level, or FULL,
 * its `durability = "fsync"`; both in WAL mode, as a2a-node runs SQLite).
 */
export async function openSdkStore(spec: string, synchronous: "NORMAL" | "FULL"): Promise<SdkStore> {
  if (spec === "memory") return { store: new InMemoryTaskStore(), close: async () => {} };
  if (spec.startsWith("postgres://") || spec.startsWith("postgresql://")) {
    a2aDb(["upgrade", "--url", spec]);
    const pool = new pg.Pool({ connectionString: spec, max: POOL_SIZE, connectionTimeoutMillis: 10_000 });
    return durable(new Kysely({ dialect: new PostgresDialect({ pool }) }));
  }
  if (spec.startsWith("sqlite:")) {
    const sqlite = new Database(spec.slice("sqlite:".length), { create: true });
    sqlite.exec(`PRAGMA synchronous = ${synchronous}`);
    sqlite.exec("PRAGMA journal_mode = WAL");
    sqlite.exec(a2aDb(["upgrade", "--sql", "--dialect", "sqlite"]));
    return durable(new Kysely({ dialect: new SqliteDialect({ database: kyselySqlite(sqlite) }) }));
  }
  throw new Error(`unknown store '${spec}' (use memory, postgres://… or sqlite:FILE)`);
}

function durable(db: Kysely<unknown>): SdkStore {
  return { store: new DatabaseTaskStore(db), close: () => db.destroy() };
}

/** Runs the SDK's schema CLI; returns what it printed. */
function a2aDb(args: string[]): string {
  const r = Bun.spawnSync([process.execPath, A2A_DB, ...args], { stdout: "pipe", stderr: "pipe" });
  if (r.exitCode !== 0) throw new Error(`a2a-db ${args.join(" ")} failed: ${r.stderr.toString()}`);
  return r.stdout.toString();
}

/**
 * bun:sqlite as Kysely's SqliteDialect expects a database (the better-sqlite3 shape). Statements come from
 * bun:sqlite's cache (`query`), which better-sqlite3 has no equivalent of: if anything, this favours the SDK.
 */
function kyselySqlite(db: Database): SqliteDatabase {
  return {
    close: () => db.close(),
    prepare(sql: string) {
      const statement = db.query(sql);
      const params = (p: ReadonlyArray<unknown>) => p as never[];
      return {
        reader: statement.columnNames.length > 0,
        all: (p: ReadonlyArray<unknown>) => statement.all(...params(p)),
        run: (p: ReadonlyArray<unknown>) => statement.run(...params(p)),
        iterate: (p: ReadonlyArray<unknown>) => statement.iterate(...params(p)),
      };
    },
  };
}
