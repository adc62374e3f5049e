import type { StreamItem } from "../protocol/types";

/**
 * One subscriber's view of a task's events: an async iterable fed by the runner. Items arrive in sequence
 * order; an item whose sequence number was already delivered (seen in the replay from the database and
 * again live) is dropped, so a subscriber never sees an event twice.
 */
export class EventStream implements AsyncIterable<StreamItem> {
  private readonly buffer: StreamItem[] = [];
  private waiting: ((r: IteratorResult<StreamItem>) => void) | undefined;
  private failWaiting: ((err: unknown) => void) | undefined;
  private ended = false;
  private error: unknown;
  private lastSeq = 0;
  /** Live items that arrived while the stream was held (see hold), and whether it was ended meanwhile. */
  private held: StreamItem[] | undefined;
  private endWhenReleased = false;

  private readonly onClose: () => void;

  constructor(
    /** Called once when the consumer stops (end, error, or the client went away). */
    onClose: () => void = () => {},
    /** Events held for a consumer that reads too slowly before it is cut off (it can resubscribe). */
    private readonly maxBuffered = 50_000,
  ) {
    let closed = false;
    this.onClose = () => {
      if (closed) return;
      closed = true;
      onClose();
    };
  }

  push(item: StreamItem): void {
    if (this.ended) return;
    if (this.held) {
      this.held.push(item);
      return;
    }
    if (item.seq !== undefined) {
      if (item.seq <= this.lastSeq) return;
      this.lastSeq = item.seq;
    }
    if (this.waiting) {
      const w = this.waiting;
      this.waiting = this.failWaiting = undefined;
      w({ value: item, done: false });
      return;
    }
    if (this.buffer.length >= this.maxBuffered) {
      this.fail(
        new Error(
          `subscriber fell ${this.maxBuffered} events behind; resubscribe with Last-Event-ID ${this.lastSeq - this.buffer.length}`,
        ),
      );
      return;
    }
    this.buffer.push(item);
  }

  /**
   * Holds live items back until `release`: a subscriber that subscribes first and reads the stored events
   * after (so that nothing falls between the two) gets the stored ones first, then the live ones in order.
   * `after`: the number the stream goes on from; nothing at or below it is delivered.
   */
  hold(after?: number): void {
    this.held ??= [];
    // The subscriber has every event up to `after` already (its Last-Event-ID, or what its snapshot reflects).
    if (after !== undefined && after > this.lastSeq) this.lastSeq = after;
  }

  /** Delivers `replay` (stored items, in order), then what was held; an end asked for meanwhile follows. */
  release(replay: Iterable<StreamItem>): void {
    const held = this.held ?? [];
    this.held = undefined;
    for (const item of replay) this.push(item);
    for (const item of held) this.push(item);
    if (this.endWhenReleased) this.end();
  }

  /** Ends the stream after what is buffered (after what is held, if it is held). */
  end(): void {
    if (this.ended) return;
    if (this.held) {
      this.endWhenReleased = true;
      return;
    }
    this.ended = true;
    if (this.waiting && this.buffer.length === 0) {
      const w = this.waiting;
      this.waiting = this.failWaiting = undefined;
      w({ value: undefined, done: true });
      this.onClose();
    }
  }

  fail(err: unknown): void {
    if (this.ended) return;
    this.ended = true;
    this.error = err;
    this.buffer.length = 0;
    if (this.failWaiting) {
      const f = this.failWaiting;
      this.waiting = this.failWaiting = undefined;
      f(err);
    }
    this.onClose();
  }

  /** The last sequence number delivered (or replayed). */
  get position(): number {
    return this.lastSeq;
  }

  [Symbol.asyncIterator](): AsyncIterator<StreamItem> {
    return {
      next: () => {
        const item = this.buffer.shift();
        if (item) return Promise.resolve({ value: item, done: false });
        if (this.error !== undefined) {
          const err = this.error;
          this.error = undefined;
          return Promise.reject(err);
        }
        if (this.ended) {
          this.onClose();
          return Promise.resolve({ value: undefined, done: true });
        }
        return new Promise((resolve, reject) => {
          this.waiting = resolve;
          this.failWaiting = reject;
        });
      },
      return: () => {
        this.ended = true;
        this.buffer.length = 0;
        if (this.waiting) {
          const w = this.waiting;
          this.waiting = this.failWaiting = undefined;
          w({ value: undefined, done: true });
        }
        this.onClose();
        return Promise.resolve({ value: undefined, done: true });
      },
    };
  }
}
