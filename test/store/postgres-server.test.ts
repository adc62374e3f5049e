import { SQL } from "bun";
import { describe, expect, it } from "vitest";
import { freshDatabase } from "../helpers/postgres";

// The Postgres stores' tests stand on this: a real server, started by the suite itself, a database per file.
describe("the test run's Postgres server", () => {
  it("gives each caller an empty database of its own, and drops it", async () => {
    const a = await freshDatabase();
    const b = await freshDatabase();
    expect(a.url).not.toBe(b.url);
    const sql = new SQL(a.url, { max: 1 });
    try {
      const [row] = await sql`SELECT current_database() AS db, current_setting('server_version_num')::int AS version`;
      expect(row.db).toBe(new URL(a.url).pathname.slice(1));
      expect(row.version).toBeGreaterThanOrEqual(150000);
      const tables = await sql`SELECT count(*)::int AS n FROM pg_tables WHERE schemaname = 'public'`;
      expect(tables[0].n).toBe(0);
    } finally {
      await sql.close();
    }
    await a.drop();
    await b.drop();
    const gone = new SQL(a.url, { max: 1, connectionTimeout: 5 });
    await expect(gone`SELECT 1`).rejects.toThrow(/does not exist/);
    await gone.close();
  });
});
