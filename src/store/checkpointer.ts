/**
 * Moves SQLite's WAL checkpoints off the event loop. A checkpoint copies the WAL back into the database file
 * and fsyncs it; done inline (SQLite's default, every 1000 pages) it stalls every request in flight for
 * milliseconds. The daemon turns automatic checkpoints off and runs them here, in a worker thread with its
 * own connection, in PASSIVE mode so writers are never blocked.
 */
const WORKER_SOURCE = `
import { Database } from "bun:sqlite";
self.onmessage = (e) => {
  const db = new Database(e.data.path);
  db.exec("PRAGMA busy_timeout = 1000");
  setInterval(() => { try { db.query("PRAGMA wal_checkpoint(PASSIVE)").get(); } catch {} }, e.data.intervalMs);
};
`;

export interface Checkpointer {
  /** Ends the worker; a checkpoint cut short is harmless (the WAL stays valid and the next one redoes it). */
  stop(): void;
}

export function startCheckpointer(path: string, intervalMs = 500): Checkpointer {
  const worker = new Worker(`data:text/javascript,${encodeURIComponent(WORKER_SOURCE)}`);
  worker.postMessage({ path, intervalMs });
  worker.unref();
  return { stop: () => worker.terminate() };
}
