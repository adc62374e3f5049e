/**
 * The outside world a command may touch. Commands never reach for `process` directly, so tests run them
 * against buffers and a fake environment.
 */
export interface TextSink {
  write(text: string): void;
  /** The stream is a terminal (a person reads it), not a pipe, a file or the journal. */
  isTTY?: boolean;
}

export interface Io {
  stdout: TextSink;
  stderr: TextSink;
  env: Record<string, string | undefined>;
  /** Resolves when the command should stop (SIGINT/SIGTERM for the daemon; never in tests unless asked). */
  stopSignal?: AbortSignal;
  /** Calls `handler` on each reload request (SIGHUP for the daemon); never in tests unless asked. */
  onReload?(handler: () => void): void;
}

/** An Io that records everything, for tests. */
export function bufferIo(env: Record<string, string | undefined> = {}): Io & { out(): string; err(): string } {
  let out = "";
  let err = "";
  return {
    stdout: { write: (t) => void (out += t) },
    stderr: { write: (t) => void (err += t) },
    env,
    out: () => out,
    err: () => err,
  };
}

/**
 * The real process. Signal handlers are installed only when a command asks for `stopSignal` (the daemon), so
 * Ctrl-C still ends every other command the usual way.
 */
export function processIo(): Io {
  let stop: AbortController | undefined;
  return {
    stdout: { write: (t) => void process.stdout.write(t), isTTY: process.stdout.isTTY === true },
    stderr: { write: (t) => void process.stderr.write(t), isTTY: process.stderr.isTTY === true },
    env: process.env,
    get stopSignal() {
      if (!stop) {
        const ctrl = new AbortController();
        for (const sig of ["SIGINT", "SIGTERM"] as const) process.on(sig, () => ctrl.abort(sig));
        stop = ctrl;
      }
      return stop.signal;
    },
    onReload(handler) {
      // Installing a handler is what keeps SIGHUP from ending the process (its default action).
      process.on("SIGHUP", handler);
    },
  };
}
