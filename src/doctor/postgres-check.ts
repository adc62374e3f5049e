/**
 * Doctor's look at a Postgres database_url when no node runs on the home to ask (a running node's readiness
 * says it, with the connection it holds): the server answers within the timeout, takes writes (not a standby,
 * not read-only), and holds a2a-node's tables (or is empty, for the first serve to fill). Nothing is changed:
 * the write check only asks for a transaction id.
 */
import { redactUrl } from "../store/postgres/url";
import { type Finding, fail, ok } from "./check";

export async function checkPostgres(url: string, timeoutMs: number): Promise<Finding> {
  const display = redactUrl(url);
  // Bun.SQL is read here, not imported, as the node does: its Postgres client is loaded only for Postgres.
  const sql = new Bun.SQL(url, { max: 1, connectionTimeout: Math.max(1, Math.ceil(timeoutMs / 1000)), idleTimeout: 5 });
  try {
    const [row] = (await bounded(
      sql`SELECT pg_is_in_recovery() AS standby, current_setting('transaction_read_only') AS read_only, to_regclass('public.tasks') IS NOT NULL AS has_tasks`,
      timeoutMs,
    )) as { standby: boolean; read_only: string; has_tasks: boolean }[];
    if (row.standby)
      return fail(
        "database",
        `Postgres ${display} is a standby (in recovery): it takes no writes`,
        "point database_url at the primary",
      );
    if (row.read_only === "on")
      return fail(
        "database",
        `Postgres ${display} is read-only (default_transaction_read_only)`,
        "point database_url at a server that takes writes, or turn read-only off for this database",
      );
    await bounded(sql`SELECT txid_current()`, timeoutMs);
    return ok(
      "database",
      `Postgres ${display} answers and takes writes${row.has_tasks ? "" : "; no a2a-node tables yet: the first 'a2a-node serve' creates them"}`,
    );
  } catch (err) {
    const reason = (err as Error)?.message ?? String(err);
    const e = reason.toLowerCase();
    const fix = /password|authentication|role .* does not exist/.test(e)
      ? "check the user and password in database_url (config.toml, A2A_NODE_DATABASE_URL or --database)"
      : /does not exist/.test(e)
        ? "create the database (createdb NAME), or fix its name in database_url"
        : "is Postgres running, and reachable from here at that host and port? (pg_isready -d URL)";
    return fail("database", `Postgres ${display}: ${reason}`, fix);
  } finally {
    await sql.close({ timeout: 0 }).catch(() => {});
  }
}

async function bounded<T>(query: Promise<T>, timeoutMs: number): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${timeoutMs / 1000} s`)), timeoutMs);
  });
  query.catch(() => {}); // answered after the timeout: nobody listens any more
  try {
    return await Promise.race([query, late]);
  } finally {
    clearTimeout(timer);
  }
}
