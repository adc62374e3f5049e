/**
 * A promise with its resolve and reject at hand, for states that many callers wait on (a task's turn, a group
 * commit, an answer passed to another replica). A rejection nobody awaits is not reported as unhandled: a waiter
 * may never come, and failures are reported where they happen. At the bottom (imports nothing of src/), so the
 * runner and the stores share one.
 */
export interface Deferred<T> {
  promise: Promise<T>;
  resolve(value: T): void;
  reject(err: unknown): void;
}

export function deferred<T>(): Deferred<T> {
  let resolve!: (v: T) => void;
  let reject!: (err: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  promise.catch(() => {});
  return { promise, resolve, reject };
}
