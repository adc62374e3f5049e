/**
 * The outside world a command may touch. Commands never reach for `process` directly, so tests run them
 * against buffers and a fake environment.
 */
export interface TextSink {
  write(text: string): void;
}

export interface Io {
  stdout: TextSink;
  stderr: TextSink;
  env: Record<string, string | undefined>;
  /** Resolves when the command should stop (SIGINT/SIGTERM for the daemon; never in tests unless asked). */
  stopSignal?: AbortSignal;
  /** Calls `handler` on each reload request (SIGHUP for the daemon); never in tests unless asked. */
  onReload?(handler: () => void): void;
  /** Asks the person at the terminal for a secret, without echoing it; absent when there is no terminal. */
  askSecret?(prompt: string): Promise<string>;
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
    stdout: { write: (t) => void process.stdout.write(t) },
    stderr: { write: (t) => void process.stderr.write(t) },
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
    askSecret: process.stdin.isTTY && process.stderr.isTTY ? askSecretOnTerminal : undefined,
  };
}

/** Reads one line from the terminal with echo off; Ctrl-C or Ctrl-D gives up. */
function askSecretOnTerminal(prompt: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const stdin = process.stdin;
    let typed = "";
    const done = (err?: Error) => {
      stdin.setRawMode(false);
      stdin.pause();
      stdin.off("data", onData);
      process.stderr.write("\n");
      if (err) reject(err);
      else resolve(typed);
    };
    const onData = (chunk: Buffer) => {
      for (const ch of chunk.toString("utf8")) {
        if (ch === "\r" || ch === "\n") return done();
        if (ch === "\u0003" || ch === "\u0004") return done(new Error("cancelled"));
        if (ch === "\u007f" || ch === "\b") typed = typed.slice(0, -1);
        else typed += ch;
      }
    };
    process.stderr.write(prompt);
    stdin.setRawMode(true);
    stdin.resume();
    stdin.on("data", onData);
  });
}
