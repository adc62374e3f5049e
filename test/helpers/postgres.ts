/**
 * A database of its own for a test file (or one suite of it) on the run's Postgres server (postgres-global.ts):
 * created empty, dropped at the end. Tests then connect to `url` as the node would.
 */
import { SQL } from "bun";
import { inject } from "vitest";
import { databaseName } from "./postgres-server";

export interface TestDatabase {
  /** postgres://… of the new, empty database. */
  url: string;
  /** Drops it (closing whatever is still connected to it). */
  drop(): Promise<void>;
}

export async function freshDatabase(prefix = "t"): Promise<TestDatabase> {
  const admin = inject("postgresAdminUrl");
  const name = databaseName(prefix);
  await withAdmin(admin, (sql) => sql.unsafe(`CREATE DATABASE "${name}"`));
  const url = new URL(admin);
  url.pathname = `/${name}`;
  return {
    url: url.href,
    drop: () => withAdmin(admin, (sql) => sql.unsafe(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`)),
  };
}

async function withAdmin<T>(adminUrl: string, run: (sql: SQL) => Promise<T>): Promise<T> {
  const sql = new SQL(adminUrl, { max: 1 });
  try {
    return await run(sql);
  } finally {
    await sql.close();
  }
}
