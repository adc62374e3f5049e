import { expect } from "vitest";

/**
 * Waiting for a condition, three ways, from the most to the least exact:
 * - `Conditions`: state the test's own code changes (a fake server's requests, runs, answers): the fake calls
 *   `changed()` after each change and a waiting `until()` resolves on the change that makes it true. No timers.
 * - `untilSettled`: in-process work that needs only turns of the event loop (promises, immediates), no I/O: turns
 *   the loop until the condition holds, and fails the test if a thousand turns did not make it.
 * - `untilWithin`: state in another process (a replica, a compiled binary) that sends no event: asks every
 *   `everyMs` until it holds, failing after `ms` with what it waited for. Only where no event can be awaited.
 */
export class Conditions {
  private readonly waiting: (() => boolean)[] = [];

  /** Re-checks every waiting condition; call it after each change of the state they read. */
  readonly changed = (): void => {
    for (let i = this.waiting.length - 1; i >= 0; i--) if (this.waiting[i]!()) this.waiting.splice(i, 1);
  };

  /** Resolves with probe's first value that is neither undefined nor false: at once, or on the change bringing it. */
  until<T>(probe: () => T | undefined | false): Promise<T> {
    const now = probe();
    if (now !== undefined && now !== false) return Promise.resolve(now);
    return new Promise<T>((resolve) =>
      this.waiting.push(() => {
        const v = probe();
        if (v === undefined || v === false) return false;
        resolve(v);
        return true;
      }),
    );
  }

  /** Keeps `check` until it returns true on some change (a check with its own side effects, e.g. a timeout). */
  watch(check: () => boolean): void {
    this.waiting.push(check);
  }
}

/** Turns the event loop until `ready()` holds; the test fails if a thousand turns do not make it hold. */
export async function untilSettled(ready: () => boolean | Promise<boolean>): Promise<void> {
  for (let i = 0; i < 1000 && !(await ready()); i++) await new Promise((r) => setImmediate(r));
  expect(await ready()).toBe(true);
}

/** Asks `ready()` every `everyMs` until it holds; throws after `ms`, naming `what` it waited for. */
export async function untilWithin(ms: number, what: string, ready: () => Promise<boolean>, everyMs = 50) {
  const end = Date.now() + ms;
  while (!(await ready())) {
    if (Date.now() > end) throw new Error(`not within ${ms} ms: ${what}`);
    await Bun.sleep(everyMs);
  }
}
