/**
 * Async-iterable helpers that pass return() straight through to their source. Async generators cannot: a
 * return() on a generator suspended in an await only takes effect when that await settles, so a client that
 * leaves a quiet stream would stay subscribed until the task's next event.
 */
export function mapStream<T, U>(source: AsyncIterable<T>, fn: (item: T) => U, first?: U): AsyncIterable<U> {
  return {
    [Symbol.asyncIterator]() {
      const it = source[Symbol.asyncIterator]();
      let pending = first !== undefined;
      return {
        async next(): Promise<IteratorResult<U>> {
          if (pending) {
            pending = false;
            return { value: first as U, done: false };
          }
          const r = await it.next();
          return r.done ? { value: undefined, done: true } : { value: fn(r.value), done: false };
        },
        async return(): Promise<IteratorResult<U>> {
          await it.return?.();
          return { value: undefined, done: true };
        },
      };
    },
  };
}
