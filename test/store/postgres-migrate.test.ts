import { SQL } from "bun";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { applyPostgresMigrations, openPostgres, redactUrl } from "../../src/store/postgres/database";
import { migrations } from "../../src/store/postgres/migrations.gen";
import { freshDatabase, type TestDatabase } from "../helpers/postgres";

let db: TestDatabase;
beforeAll(async () => {
  db = await freshDatabase("migrate");
});
afterAll(async () => {
  await db.drop();
});

describe("Postgres migrations", () => {
  it("are applied once when several replicas start together (advisory lock), and not again later", async () => {
    const clients = Array.from({ length: 4 }, () => new SQL(db.url, { max: 1 }));
    try {
      const applied = await Promise.all(clients.map((c) => applyPostgresMigrations(c, migrations)));
      expect(applied.filter((tags) => tags.length > 0)).toEqual([migrations.map((m) => m.tag)]);
      const [{ n }] = await clients[0]`SELECT count(*)::int AS n FROM drizzle.__drizzle_migrations`;
      expect(n).toBe(migrations.length);
      const tables = (
        await clients[0]`SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY tablename`
      ).map((r: { tablename: string }) => r.tablename);
      expect(tables).toEqual([
        "caller_usage",
        "health_probe",
        "push_configs",
        "push_deliveries",
        "task_answers",
        "task_counts",
        "task_events",
        "task_leases",
        "tasks",
      ]);
      expect(await applyPostgresMigrations(clients[1], migrations)).toEqual([]);
    } finally {
      await Promise.all(clients.map((c) => c.close()));
    }
  });

  it("rolls back a migration that fails, leaving the database as it was", async () => {
    const c = new SQL(db.url, { max: 1 });
    try {
      const bad = [
        ...migrations,
        {
          tag: "9999_bad",
          sql: ["CREATE TABLE later_one (x int)", "SELECT no_such_function()"],
          folderMillis: Date.now() + 1e12,
          hash: "x",
        },
      ];
      await expect(applyPostgresMigrations(c, bad)).rejects.toThrow(/no_such_function/);
      const [{ n }] = await c`SELECT count(*)::int AS n FROM pg_tables WHERE tablename = 'later_one'`;
      expect(n).toBe(0);
    } finally {
      await c.close();
    }
  });

  it("names the server but never the password when it cannot connect", async () => {
    const url = new URL(db.url);
    url.password = "wrong-secret";
    const err = await openPostgres(url.href).catch((e: Error) => e);
    expect(err).toBeInstanceOf(Error);
    expect((err as Error).message).toContain(
      `cannot use the Postgres database postgres://postgres:***@127.0.0.1:${url.port}/`,
    );
    expect((err as Error).message).not.toContain("wrong-secret");
  });

  it("redacts passwords in URLs for logs", () => {
    expect(redactUrl("postgres://a2a:s3cret@db.example:5432/agents?sslmode=require&password=p2")).toBe(
      "postgres://a2a:***@db.example:5432/agents?sslmode=require&password=***",
    );
    expect(redactUrl("postgres://db.example/agents")).toBe("postgres://db.example/agents");
    expect(redactUrl("not a url s3cret")).not.toContain("s3cret");
  });
});
