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

/**
 * Like mapStream, but an error of the source becomes the stream's last item, `fail(err)`, instead of a
 * rejection: a transport tells the client why its stream ended, in the stream.
 */
export function mapStreamCatching<T, U>(
  source: AsyncIterable<T>,
  fn: (item: T) => U,
  fail: (err: unknown) => U,
): AsyncIterable<U> {
  return {
    [Symbol.asyncIterator]() {
      const it = source[Symbol.asyncIterator]();
      let done = false;
      return {
        async next(): Promise<IteratorResult<U>> {
          if (done) return { value: undefined, done: true };
          let r: IteratorResult<T>;
          try {
            r = await it.next();
          } catch (err) {
            done = true;
            return { value: fail(err), done: false };
          }
          if (r.done) {
            done = true;
            return { value: undefined, done: true };
          }
          try {
            return { value: fn(r.value), done: false };
          } catch (err) {
            // The item could not be sent (e.g. its answer does not fit the caller's budget): the stream ends
            // here, so its source is stopped too, as if the client had gone.
            done = true;
            void it.return?.();
            return { value: fail(err), done: false };
          }
        },
        async return(): Promise<IteratorResult<U>> {
          done = true;
          await it.return?.();
          return { value: undefined, done: true };
        },
      };
    },
  };
}
