import { Database } from "bun:sqlite";
import { drizzle, type BunSQLiteDatabase } from "drizzle-orm/bun-sqlite";
import { chmodSync, existsSync, statSync } from "node:fs";
import { migrations } from "./migrations.gen";
import { applyMigrations } from "./migrate";
import * as schema from "./schema";
import { startCheckpointer, type Checkpointer } from "./checkpointer";
import { SYNCHRONOUS, type Durability } from "./durability";

export type Db = BunSQLiteDatabase<typeof schema>;

export interface OpenDatabase {
  db: Db;
  sqlite: Database;
  /**
   * Called by writers after a commit: keeps the WAL file bounded (see WAL_CAP_BYTES). Cheap when the WAL
   * is small (one stat of its file).
   */
  afterCommit(): void;
  close(): void;
}

/** The most the WAL file may grow to under any load (issue 13: a write flood once left it at 906 MiB). */
export const WAL_CAP_BYTES = 64 * 1024 * 1024;
/** Past this, the writer itself checkpoints: half the cap, so one turn's writes cannot cross the cap. */
export const WAL_CHECKPOINT_BYTES = WAL_CAP_BYTES / 2;
/** Past this, the writer waits until its checkpoint gets through: the cap must hold under any load. */
export const WAL_HARD_BYTES = (WAL_CAP_BYTES * 3) / 4;

/** Runs a TRUNCATE checkpoint; true if it could not finish (another checkpoint or a reader was in the way). */
function checkpointBusy(sqlite: Database): boolean {
  try {
    return (sqlite.query("PRAGMA wal_checkpoint(TRUNCATE)").get() as { busy: number } | null)?.busy !== 0;
  } catch {
    return true;
  }
}

export interface OpenOptions {
  /** Run WAL checkpoints in a worker thread instead of inline (the daemon); see checkpointer.ts. */
  backgroundCheckpoints?: boolean;
  /** Default "process-crash" (see durability.ts). */
  durability?: Durability;
}

/**
 * Opens (creating if absent) the node's SQLite database and brings its schema up to date.
 * WAL lets readers run beside the single writer; synchronous follows the durability level (NORMAL keeps every
 * commit durable against a process crash while skipping an fsync per commit; FULL syncs each commit). busy_timeout
 * covers a second process (the CLI) touching the file while the daemon writes.
 */
export function openDatabase(path: string, options: OpenOptions = {}): OpenDatabase {
  const fresh = path !== ":memory:" && !existsSync(path);
  const sqlite = new Database(path, { create: true, strict: true });
  if (fresh) chmodSync(path, 0o600);
  // synchronous first: a new file's switch to WAL then syncs less (measured: a millisecond off a fresh start).
  sqlite.exec(`PRAGMA synchronous = ${SYNCHRONOUS[options.durability ?? "process-crash"]}`);
  sqlite.exec("PRAGMA journal_mode = WAL");
  sqlite.exec("PRAGMA foreign_keys = ON");
  sqlite.exec("PRAGMA busy_timeout = 5000");
  applyMigrations(sqlite, migrations);
  const db = drizzle(sqlite, { schema });
  let checkpointer: Checkpointer | undefined;
  const walPath = `${path}-wal`;
  let afterCommit = () => {};
  if (options.backgroundCheckpoints && path !== ":memory:") {
    sqlite.exec("PRAGMA wal_autocheckpoint = 0");
    sqlite.exec("PRAGMA journal_size_limit = 67108864"); // keep a reset WAL file from staying huge
    checkpointer = startCheckpointer(path);
    // The background checkpointer (PASSIVE) cannot keep up with a sustained flood: it copies frames while
    // new ones are appended, the WAL is never fully copied back, so it never starts over and grows without
    // end. When it passes WAL_CHECKPOINT_BYTES, the writer checkpoints inline in TRUNCATE mode (between two
    // commits, so nothing of ours is in flight): it copies the WAL back, syncs, and empties the file. That
    // stalls this one turn for tens of milliseconds, and only under a flood (measured in the bench's
    // peak-WAL column); quiet moments are left to the worker as before.
    afterCommit = () => {
      let size = 0;
      try {
        size = statSync(walPath).size;
      } catch {
        return;
      }
      if (size <= WAL_CHECKPOINT_BYTES) return;
      // Busy (the worker is mid-checkpoint, or a reader holds an old snapshot) is answered, not thrown: the
      // commit stands and the next one tries again. Past WAL_HARD_BYTES there may be no next one in time
      // (a loaded machine, a slow disk): the writer then waits for the checkpoint, up to a second, so the cap
      // holds; new writes queue meanwhile.
      const hard = size > WAL_HARD_BYTES;
      for (let attempt = 0; ; attempt++) {
        if (!checkpointBusy(sqlite) || !hard || attempt >= 100) return;
        Bun.sleepSync(10);
      }
    };
  }
  return {
    db,
    sqlite,
    afterCommit: () => afterCommit(),
    close() {
      if (checkpointer) {
        checkpointer.stop();
        sqlite.exec("PRAGMA wal_checkpoint(TRUNCATE)");
      }
      sqlite.close();
    },
  };
}
