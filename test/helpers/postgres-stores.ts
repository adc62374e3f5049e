/**
 * Postgres for the contract suites: one database per test file, emptied before each test (a TRUNCATE is much
 * quicker than a CREATE DATABASE), dropped when the file ends.
 */
import { afterAll } from "vitest";
import { openPostgres, type PostgresDatabase } from "../../src/store/postgres/database";
import { freshDatabase, type TestDatabase } from "./postgres";

let shared: Promise<TestDatabase> | undefined;

/** An open, migrated, empty database (the file's own); close it when the test ends. */
export async function emptyPostgres(max = 4): Promise<PostgresDatabase> {
  if (!shared) {
    shared = freshDatabase("contract");
    afterAll(async () => (await shared)?.drop());
  }
  const database = await openPostgres((await shared).url, { max });
  await database.sql`TRUNCATE tasks, task_counts, caller_usage, task_events, task_leases, task_answers, health_probe, push_configs, push_deliveries`;
  return database;
}
