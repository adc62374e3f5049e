import type { SQL } from "bun";
import type { Migration } from "../migrate";
import { migrations as embedded } from "./migrations.gen";
import { redactUrl } from "./url";

export { redactUrl } from "./url";

/** A pool of connections to the shared Postgres database, its schema brought up to date. */
export interface PostgresDatabase {
  sql: SQL;
  /** The URL with its password replaced, for logs and `serve --check`. */
  display: string;
  close(): Promise<void>;
}

export interface PostgresOptions {
  /** Connections in the pool (default 10); LISTEN takes one more of its own. */
  max?: number;
  migrations?: Migration[];
}

/**
 * Connects to `url` and applies the embedded migrations (see applyPostgresMigrations). Throws, naming the
 * server (never the password), when it cannot connect.
 */
export async function openPostgres(url: string, options: PostgresOptions = {}): Promise<PostgresDatabase> {
  const display = redactUrl(url);
  // Bun.SQL is read here, not imported: a static import of it loads Bun's whole Postgres client at every start
  // of the binary (a third of `a2a-node version`'s CPU), though most nodes never use Postgres.
  const sql = new Bun.SQL(url, { max: options.max ?? 10, connectionTimeout: 10, idleTimeout: 60 });
  try {
    await applyPostgresMigrations(sql, options.migrations ?? embedded);
  } catch (err) {
    await sql.close({ timeout: 0 }).catch(() => {});
    throw new Error(`cannot use the Postgres database ${display}: ${(err as Error).message}`);
  }
  return { sql, display, close: () => sql.close({ timeout: 5 }) };
}

/** The advisory lock the replicas of one database take while migrating: any 64-bit number of our own. */
const MIGRATION_LOCK = 0x4132_414e_4f44_45n; // "A2ANODE"

/**
 * Brings the database up to date with `migrations`, in one transaction under a transaction-level advisory lock:
 * replicas starting together queue behind the first, and each then finds the migrations it would apply
 * already recorded. Bookkeeping is drizzle's own (drizzle.__drizzle_migrations), as on SQLite. Returns the
 * tags applied.
 */
export async function applyPostgresMigrations(sql: SQL, migrations: Migration[]): Promise<string[]> {
  return sql.begin(async (tx) => {
    await tx`SELECT pg_advisory_xact_lock(${MIGRATION_LOCK.toString()}::bigint)`;
    await tx`CREATE SCHEMA IF NOT EXISTS drizzle`;
    await tx`CREATE TABLE IF NOT EXISTS drizzle.__drizzle_migrations (id SERIAL PRIMARY KEY, hash text NOT NULL, created_at bigint)`;
    const [last] = await tx`SELECT created_at FROM drizzle.__drizzle_migrations ORDER BY created_at DESC LIMIT 1`;
    const after = last ? Number(last.created_at) : -Infinity;
    const pending = migrations.filter((m) => m.folderMillis > after);
    for (const m of pending) {
      for (const statement of m.sql) if (statement.trim()) await tx.unsafe(statement);
      await tx`INSERT INTO drizzle.__drizzle_migrations (hash, created_at) VALUES (${m.hash}, ${m.folderMillis})`;
    }
    return pending.map((m) => m.tag);
  });
}
