import { statSync } from "node:fs";
import { descriptorHeadroom } from "../descriptor-headroom";

/**
 * Looks at the database from outside the node's own connection, in a worker thread, so neither question stalls
 * the event loop:
 * - `writable()`: a real write that must commit, through a connection opened afresh on the file at the
 *   database's path (GET /health/ready). It fails when the file is read-only, locked by another process, on a
 *   full or read-only file system, or gone; and the file at the path must still be the one the node opened
 *   (a deleted database keeps taking the node's writes, into a file nobody will see again).
 * - `countByState()`: stored tasks by state (the tasks-by-state gauge of GET /metrics), from task_counts
 *   (kept by triggers, see schema.ts): a few rows per caller, where counting the tasks took tens of
 *   milliseconds per hundred thousand.
 */
const WORKER_SOURCE = `
import { Database } from "bun:sqlite";
self.onmessage = (e) => {
  const { id, kind, path, now } = e.data;
  let db;
  try {
    db = new Database(path, { readwrite: true, create: false, strict: true });
    db.exec("PRAGMA busy_timeout = 1000");
    if (kind === "write") {
      db.exec("BEGIN IMMEDIATE");
      try {
        db.query("INSERT INTO health_probe (id, checked_at) VALUES (1, $now) ON CONFLICT(id) DO UPDATE SET checked_at = excluded.checked_at").run({ now });
        db.exec("COMMIT");
      } catch (err) {
        try { db.exec("ROLLBACK"); } catch {}
        throw err;
      }
      const back = db.query("SELECT checked_at AS at FROM health_probe WHERE id = 1").get();
      if (!back || back.at !== now) throw new Error("a committed write did not read back");
      postMessage({ id, ok: true });
    } else {
      postMessage({ id, ok: true, states: db.query("SELECT state, sum(n) AS n FROM task_counts GROUP BY state HAVING sum(n) <> 0").all() });
    }
  } catch (err) {
    postMessage({ id, ok: false, error: String((err && err.message) || err) });
  } finally {
    try { db && db.close(); } catch {}
  }
};
`;

export type ProbeResult = {
  ok: boolean;
  detail: string;
};

/**
 * What GET /health/ready's database check and the tasks-by-state gauge ask of the store the node uses: the
 * home's SQLite file (SqliteProbe) or the shared Postgres database (PostgresProbe).
 */
export interface StoreHealth {
  /** Whether a write to the store commits now; the detail says what failed and what to do. */
  writable(): Promise<ProbeResult>;
  /** Stored tasks by state; throws if the store does not answer. */
  countByState(): Promise<{ state: string; n: number }[]>;
  stop(): void;
}

interface Reply {
  id: number;
  ok: boolean;
  error?: string;
  states?: { state: string; n: number }[];
}

export class SqliteProbe implements StoreHealth {
  private worker: Worker | undefined;
  private next = 1;
  private readonly waiting = new Map<number, (reply: Reply) => void>();
  private readonly opened: { dev: number; ino: number } | undefined;

  constructor(
    private readonly path: string,
    private readonly timeoutMs = 3000,
  ) {
    this.opened = fileId(path);
  }

  /** Whether a write to the database file commits now; the detail says what failed and what to do. */
  async writable(): Promise<ProbeResult> {
    const now = fileId(this.path);
    if (!now)
      return {
        ok: false,
        detail: `the database file ${this.path} is gone: the node is writing to a deleted file; restore it or restart the node`,
      };
    if (this.opened && (now.dev !== this.opened.dev || now.ino !== this.opened.ino))
      return {
        ok: false,
        detail: `the database file ${this.path} was replaced after the node opened it; restart the node to use the new one`,
      };
    const reply = await this.ask("write");
    if (reply.ok) return { ok: true, detail: `a write to ${this.path} committed` };
    return { ok: false, detail: `a write to ${this.path} failed: ${reply.error}${advice(reply.error ?? "")}` };
  }

  /** Stored tasks by state; throws if the database does not answer. */
  async countByState(): Promise<{ state: string; n: number }[]> {
    const reply = await this.ask("count");
    if (!reply.ok) throw new Error(reply.error);
    return reply.states ?? [];
  }

  stop(): void {
    this.worker?.terminate();
    this.worker = undefined;
    for (const resolve of this.waiting.values()) resolve({ id: 0, ok: false, error: "the node is stopping" });
    this.waiting.clear();
  }

  private ask(kind: "write" | "count"): Promise<Reply> {
    if (!this.worker) {
      // Started only with descriptors to spare: Bun ends the process when a worker cannot get its own.
      if (!descriptorHeadroom())
        return Promise.resolve({
          id: 0,
          ok: false,
          error: "the node has no file descriptor free to start its database probe with",
        });
      this.worker = new Worker(`data:text/javascript,${encodeURIComponent(WORKER_SOURCE)}`);
      this.worker.onmessage = (e: MessageEvent<Reply>) => {
        const resolve = this.waiting.get(e.data.id);
        this.waiting.delete(e.data.id);
        resolve?.(e.data);
      };
      this.worker.unref();
    }
    const id = this.next++;
    return new Promise<Reply>((resolve) => {
      const timer = setTimeout(() => {
        this.waiting.delete(id);
        resolve({ id, ok: false, error: `the database did not answer within ${this.timeoutMs / 1000} s` });
      }, this.timeoutMs);
      this.waiting.set(id, (reply) => {
        clearTimeout(timer);
        resolve(reply);
      });
      this.worker?.postMessage({ id, kind, path: this.path, now: new Date().toISOString() });
    });
  }
}

function fileId(path: string): { dev: number; ino: number } | undefined {
  try {
    const s = statSync(path);
    return { dev: s.dev, ino: s.ino };
  } catch {
    return undefined;
  }
}

function advice(error: string): string {
  const e = error.toLowerCase();
  if (e.includes("locked") || e.includes("busy"))
    return " (another process holds a lock on it: a sqlite3 shell, a backup tool; end that transaction)";
  if (e.includes("readonly") || e.includes("read-only"))
    return " (the file or its folder is not writable by the node's user, or its file system is mounted read-only)";
  if (e.includes("full") || e.includes("disk")) return " (the disk is full: free space)";
  return "";
}
