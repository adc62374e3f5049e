/**
 * The per-run event queue and the GET /v1/runs/{id}/events reader, copied from `_handle_run_events`
 * (gateway/platforms/api_server_runs.py, older: inside api_server.py):
 * - one asyncio.Queue per run, filled from the run's creation; a reader takes events off it, nothing is
 *   replayed; two readers at once split the events (getters are served first come, first served);
 * - a reader waits up to 30 s for the next event, else writes `: keepalive`; after the end sentinel it writes
 *   `: stream closed` and ends; however it ends, the run's queue is removed (`_drop_run_transport`);
 * - aiohttp does not cancel a handler when its client disconnects (`handler_cancellation` is off by default and
 *   Hermes does not turn it on), so the server only notices the departure at its next write: the next event
 *   (taken off the queue and lost) or the next keep-alive. Until then the queue stays registered.
 */
import { sseFrame, type SseOut } from "./wire";

export type HermesEvent = Record<string, unknown> & { event: string; run_id: string; timestamp: number };

/** A queued event, or null: the end-of-run sentinel. */
export type QueueItem = HermesEvent | null;

interface Getter {
  resolve(v: QueueItem | "timeout" | "dead"): void;
  timer?: ReturnType<typeof setTimeout>;
}

/** asyncio.Queue, as far as the runs code uses it: put_nowait, get with a timeout, FIFO getters. */
export class RunQueue {
  private items: QueueItem[] = [];
  private getters: Getter[] = [];
  private dead = false;

  put(item: QueueItem): void {
    if (this.dead) return;
    const g = this.getters.shift();
    if (!g) {
      this.items.push(item);
      return;
    }
    clearTimeout(g.timer);
    g.resolve(item);
  }

  /** The next item; "timeout" after timeoutMs with nothing; "dead" once the gateway process is gone. */
  get(timeoutMs: number): Promise<QueueItem | "timeout" | "dead"> {
    if (this.dead) return Promise.resolve("dead");
    if (this.items.length > 0) return Promise.resolve(this.items.shift()!);
    return new Promise((resolve) => {
      const g: Getter = { resolve };
      g.timer = setTimeout(() => {
        this.getters = this.getters.filter((x) => x !== g);
        resolve("timeout");
      }, timeoutMs);
      this.getters.push(g);
    });
  }

  /** Readers blocked in get(). */
  get waiting(): number {
    return this.getters.length;
  }

  /** Items buffered, nobody has taken them yet. */
  get buffered(): number {
    return this.items.length;
  }

  /** The process died: every blocked reader wakes with "dead", later puts vanish. */
  kill(): void {
    this.dead = true;
    for (const g of this.getters.splice(0)) {
      clearTimeout(g.timer);
      g.resolve("dead");
    }
    this.items = [];
  }
}

/** What a reader reports back to the run and the fake's hooks. */
export interface ReaderSink {
  opened(): void;
  /** An event was written to the client. */
  wrote(event: HermesEvent): void;
  /** The client went away (the fake saw the abort; the server has not noticed yet). */
  clientLeft(): void;
  /** The server took this off the queue and failed to write it: gone for good. */
  lost(event: HermesEvent): void;
  /** The reader ended (normally or by a failed write): the server drops the run's queue. */
  ended(how: "closed" | "write-failed"): void;
}

/** One GET /events reader: pumps `queue` to `out` until the sentinel, a failed write, or process death. */
export function pumpEvents(queue: RunQueue, keepaliveMs: number, out: SseOut, sink: ReaderSink): void {
  let gone = false;
  out.onGone(() => {
    if (gone) return;
    gone = true;
    sink.clientLeft();
  });
  sink.opened();
  void (async () => {
    for (;;) {
      const item = await queue.get(keepaliveMs);
      if (item === "dead") return; // the gateway process died; its connections were cut with it
      if (gone) {
        // response.write raises on the closed transport: the handler's finally drops the queue.
        if (item !== "timeout" && item !== null) sink.lost(item);
        sink.ended("write-failed");
        return;
      }
      if (item === "timeout") {
        out.write(": keepalive\n\n");
        continue;
      }
      if (item === null) {
        out.write(": stream closed\n\n");
        out.end();
        sink.ended("closed");
        return;
      }
      out.write(sseFrame(item));
      sink.wrote(item);
    }
  })();
}
