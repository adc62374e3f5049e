/**
 * Moves SQLite's WAL checkpoints off the event loop. A checkpoint copies the WAL back into the database file
 * and fsyncs it; done inline (SQLite's default, every 1000 pages) it stalls every request in flight for
 * milliseconds. The daemon turns automatic checkpoints off and runs them here, in a worker thread with its
 * own connection, in PASSIVE mode so writers are never blocked.
 */
import { descriptorHeadroom } from "../descriptor-headroom";

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

/**
 * The worker starts a moment after the node does: spinning up its thread and engine would otherwise compete
 * with the node's own start for the CPU, and a fresh WAL needs no checkpoint in its first second.
 */
export function startCheckpointer(path: string, intervalMs = 500, delayMs = 1000): Checkpointer {
  let worker: Worker | undefined;
  let timer: ReturnType<typeof setTimeout>;
  const start = () => {
    // No descriptor to spare (see descriptor-headroom.ts): try again later rather than have Bun end the process.
    if (!descriptorHeadroom()) {
      timer = setTimeout(start, delayMs);
      timer.unref?.();
      return;
    }
    worker = new Worker(`data:text/javascript,${encodeURIComponent(WORKER_SOURCE)}`);
    worker.postMessage({ path, intervalMs });
    worker.unref();
  };
  timer = setTimeout(start, delayMs);
  timer.unref?.();
  return {
    stop: () => {
      clearTimeout(timer);
      worker?.terminate();
    },
  };
}
