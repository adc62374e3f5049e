import { A2AError } from "../protocol/errors";
import type { AnswerHold, AnswerHolder } from "../rpc/caller";

export interface AnswerBudgetLimits {
  /** Bytes of answers to one caller held while it has not read them (answer_bytes_per_caller). */
  perCaller: number;
  /** Bytes of answers to all callers held while they are not read (answer_bytes_in_flight). */
  total: number;
  /** How long a request waits for its caller's (or the node's) held answers to be read before it is refused. */
  waitMs?: number;
}

/** A request over the budget waits this long for room (a client that reads takes its answers in far less). */
export const ANSWER_WAIT_MS = 10_000;

/**
 * The bytes of answers the node holds for clients that have not read them yet, per caller and in all. A task
 * may hold tens of megabytes, and its answer (GetTask, a stream's first event) is built whole before it is
 * written; a client that asks and never reads would keep every such answer in the node's memory. So:
 *
 * - an answer is counted from when it is built (holdAnswer) until the socket has taken its bytes (the HTTP
 *   loop writes it in slices under backpressure and gives each slice back once written);
 * - a new request of a caller that holds its budget (or while the node holds its total) waits until some is
 *   read (`admit`), and is refused with RESOURCE_EXHAUSTED if none is within ANSWER_WAIT_MS; waiting requests
 *   go on one at a time, so the room one read frees is not taken by every waiting request building at once;
 * - an answer built while its caller already holds its budget is refused too (a safety net for requests that
 *   were admitted together): so a caller never holds more than its budget plus one answer.
 *
 * A caller's first answer always goes, whatever its size. Each call is a map look-up and an addition.
 */
export class AnswerBudget {
  private total = 0;
  private readonly byCaller = new Map<string, number>();
  private waiters: Waiter[] = [];
  /** The waiter let through last, until its answer is built (see Admission.done): one at a time. */
  private waking: Waiter | undefined;
  private readonly waitMs: number;

  constructor(private readonly limits: AnswerBudgetLimits) {
    this.waitMs = limits.waitMs ?? ANSWER_WAIT_MS;
  }

  /** Bytes held for a caller, and in all (for tests and the metrics). */
  held(caller?: string): number {
    return caller === undefined ? this.total : (this.byCaller.get(caller) ?? 0);
  }

  /** Whether the caller may have another answer built now. */
  admits(caller: string): boolean {
    return this.total < this.limits.total && (this.byCaller.get(caller) ?? 0) < this.limits.perCaller;
  }

  /**
   * Resolves once the caller may have another answer built: at once when it may (and none of its requests
   * waits before it), or when enough of what it (or the node) holds has been read, or with the refusal after
   * waitMs. Waiting requests are let through one at a time, each once the one before has built its answer
   * (done()), so room that frees up is not taken by all of them building at once.
   */
  admit(caller: string): Promise<Admission> {
    if (this.admits(caller) && !this.waiters.some((w) => w.caller === caller)) return Promise.resolve(ADMITTED);
    return new Promise((resolve) => {
      const waiter: Waiter = {
        caller,
        wake: () => {
          clearTimeout(timer);
          resolve({ done: () => this.built(waiter) });
        },
      };
      const timer = setTimeout(() => {
        this.waiters = this.waiters.filter((w) => w !== waiter);
        resolve({ refused: this.refusal(caller), done: () => {} });
      }, this.waitMs);
      this.waiters.push(waiter);
      this.wakeNext();
    });
  }

  /** The budget of one caller, as the protocol layer counts its answers. */
  holderFor(caller: string): AnswerHolder {
    return { hold: (bytes) => this.hold(caller, bytes), refusal: () => this.refusal(caller) };
  }

  hold(caller: string, bytes: number): AnswerHold | undefined {
    if (!this.admits(caller)) return undefined;
    this.total += bytes;
    this.byCaller.set(caller, (this.byCaller.get(caller) ?? 0) + bytes);
    let left = bytes;
    return {
      release: (n?: number) => {
        const give = Math.min(left, n ?? left);
        if (give <= 0) return;
        left -= give;
        this.give(caller, give);
      },
    };
  }

  refusal(caller: string): A2AError {
    const mine = this.byCaller.get(caller) ?? 0;
    const overCaller = mine >= this.limits.perCaller;
    const [limit, max, what] = overCaller
      ? [
          "answer_bytes_per_caller",
          this.limits.perCaller,
          `answers to ${caller} that it has not read hold ${mine} bytes`,
        ]
      : [
          "answer_bytes_in_flight",
          this.limits.total,
          `answers this node's callers have not read hold ${this.total} bytes`,
        ];
    return A2AError.quota(
      `${what}, this node's limit of ${max} (${limit}); read the answers already asked for (or close those connections) and retry`,
      limit,
      { heldBytes: String(overCaller ? mine : this.total) },
    );
  }

  private give(caller: string, bytes: number): void {
    this.total -= bytes;
    const left = (this.byCaller.get(caller) ?? 0) - bytes;
    if (left <= 0) this.byCaller.delete(caller);
    else this.byCaller.set(caller, left);
    this.wakeNext();
  }

  /** Lets the first waiter that may go through, unless one let through before has not built its answer yet. */
  private wakeNext(): void {
    if (this.waking || this.waiters.length === 0) return;
    const i = this.waiters.findIndex((w) => this.admits(w.caller));
    if (i === -1) return;
    const [w] = this.waiters.splice(i, 1);
    this.waking = w;
    w.wake();
  }

  private built(w: Waiter): void {
    if (this.waking !== w) return;
    this.waking = undefined;
    this.wakeNext();
  }
}

interface Waiter {
  caller: string;
  wake(): void;
}

/** A request's turn to have its answer built: `refused` when no room came in time; done() once it is built. */
export interface Admission {
  refused?: A2AError;
  done(): void;
}

const ADMITTED: Admission = { done: () => {} };
