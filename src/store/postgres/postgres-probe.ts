import type { SQL } from "bun";
import type { ProbeResult, StoreHealth } from "../sqlite-probe";

/**
 * The readiness check and the tasks-by-state gauge on the shared Postgres database (the SQLite probe's
 * counterpart, ../sqlite-probe.ts): a real write that must commit and read back, and a count by state, each
 * bounded in time so a database that hangs (or a pool with no connection free) answers "not ready" rather
 * than never. Both go over the pool the store uses: what they find is what the node's own writes meet.
 */
export class PostgresProbe implements StoreHealth {
  private stopped = false;

  constructor(
    private readonly sql: SQL,
    /** The database as the log shows it (no password). */
    private readonly display: string,
    private readonly replica: string,
    private readonly timeoutMs = 3000,
  ) {}

  async writable(): Promise<ProbeResult> {
    const now = new Date().toISOString();
    try {
      const [back] = (await this.bounded(
        this.sql`INSERT INTO health_probe (id, checked_at, replica) VALUES (1, ${now}, ${this.replica})
          ON CONFLICT (id) DO UPDATE SET checked_at = excluded.checked_at, replica = excluded.replica RETURNING checked_at`,
      )) as { checked_at: string }[];
      if (back?.checked_at !== now) return { ok: false, detail: `a write to ${this.display} did not read back` };
      return { ok: true, detail: `a write to ${this.display} committed` };
    } catch (err) {
      const reason = (err as Error)?.message ?? String(err);
      return { ok: false, detail: `a write to ${this.display} failed: ${reason}${advice(reason)}` };
    }
  }

  async countByState(): Promise<{ state: string; n: number }[]> {
    return (await this.bounded(
      this.sql`SELECT state, sum(n)::int AS n FROM task_counts GROUP BY state HAVING sum(n) <> 0`,
    )) as { state: string; n: number }[];
  }

  stop(): void {
    this.stopped = true;
  }

  private async bounded<T>(query: Promise<T>): Promise<T> {
    if (this.stopped) throw new Error("the node is stopping");
    let timer: ReturnType<typeof setTimeout> | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new Error(`the database did not answer within ${this.timeoutMs / 1000} s`)),
        this.timeoutMs,
      );
    });
    query.catch(() => {}); // answered after the timeout: nobody listens any more
    try {
      return await Promise.race([query, late]);
    } finally {
      clearTimeout(timer);
    }
  }
}

function advice(reason: string): string {
  const e = reason.toLowerCase();
  if (e.includes("read-only") || e.includes("recovery"))
    return " (the server takes no writes: a standby, or default_transaction_read_only; point database_url at the primary)";
  if (e.includes("connection") || e.includes("connect") || e.includes("terminat"))
    return " (the server does not answer: is it running, and reachable from here?)";
  if (e.includes("space") || e.includes("disk")) return " (the database server's disk is full: free space)";
  if (e.includes("too many"))
    return " (the server has no connection free: raise its max_connections or lower the replicas' pools)";
  return "";
}
