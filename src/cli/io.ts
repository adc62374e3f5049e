/**
 * The outside world a command may touch. Commands never reach for `process` directly, so tests run them
 * against buffers and a fake environment.
 */
export interface TextSink {
  write(text: string): void;
  /** The stream is a terminal (a person reads it), not a pipe, a file or the journal. */
  isTTY?: boolean;
}

/** Which standard streams are terminals: progress lines and questions go only to a person. */
export interface Terminal {
  stdin: boolean;
  stdout: boolean;
  stderr: boolean;
  /** Width of the terminal stderr writes to, if known. */
  columns?: number;
}

export interface Io {
  stdout: TextSink;
  stderr: TextSink;
  env: Record<string, string | undefined>;
  /** Absent: no stream is a terminal (a test, a pipe). */
  tty?: Terminal;
  /** All of standard input (`--task -`). */
  readStdin?(): Promise<string>;
  /** One line of standard input, without its newline; null at its end (a confirmation prompt). */
  readLine?(): Promise<string | null>;
  /** Aborted on Ctrl-C (SIGINT) for a command that waits; installs the handler on first use. */
  interruptSignal?: AbortSignal;
  /** Resolves when the command should stop (SIGINT/SIGTERM for the daemon; never in tests unless asked). */
  stopSignal?: AbortSignal;
  /** Calls `handler` on each reload request (SIGHUP for the daemon); never in tests unless asked. */
  onReload?(handler: () => void): void;
  /** Asks the person at the terminal for a secret, without echoing it; absent when there is no terminal. */
  askSecret?(prompt: string): Promise<string>;
}

/** An Io that records everything, for tests; `stdin` is what standard input holds. */
export function bufferIo(
  env: Record<string, string | undefined> = {},
  options: { stdin?: string; tty?: Terminal } = {},
): Io & { out(): string; err(): string } {
  let out = "";
  let err = "";
  const lines = (options.stdin ?? "").split("\n");
  return {
    stdout: { write: (t) => void (out += t) },
    stderr: { write: (t) => void (err += t) },
    env,
    tty: options.tty,
    readStdin: async () => options.stdin ?? "",
    readLine: async () => (options.stdin === undefined || lines.length === 0 ? null : (lines.shift() as string)),
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
  let interrupt: AbortController | undefined;
  endQuietlyWhenReaderLeaves();
  return {
    stdout: { write: (t) => void process.stdout.write(t), isTTY: process.stdout.isTTY === true },
    stderr: { write: (t) => void process.stderr.write(t), isTTY: process.stderr.isTTY === true },
    env: process.env,
    tty: {
      stdin: process.stdin.isTTY === true,
      stdout: process.stdout.isTTY === true,
      stderr: process.stderr.isTTY === true,
      columns: process.stderr.columns || undefined, // 0 in a terminal of unknown size
    },
    readStdin: () => Bun.stdin.text(),
    readLine: readLineOnce,
    get interruptSignal() {
      if (!interrupt) {
        const ctrl = new AbortController();
        // The first Ctrl-C ends the wait in words; a second one, if that takes too long, ends the process.
        process.on("SIGINT", () => (ctrl.signal.aborted ? process.exit(130) : ctrl.abort("SIGINT")));
        interrupt = ctrl;
      }
      return interrupt.signal;
    },
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

/**
 * A reader that closes its end of the pipe (`a2a-node send --stream | head`) ends the command at the next write,
 * quietly and with exit 0, as tools that die of SIGPIPE do: the reader had what it wanted, and a stack trace
 * about EPIPE (or a stream followed on for nobody) would not help anyone. A task goes on at its peer, as
 * after Ctrl-C. Any other write error is said in one line.
 */
function endQuietlyWhenReaderLeaves(): void {
  for (const stream of [process.stdout, process.stderr])
    stream.on("error", (err: NodeJS.ErrnoException) => {
      if (err.code === "EPIPE") process.exit(0);
      if (stream !== process.stderr)
        process.stderr.write(`a2a-node: cannot write to standard output: ${err.message}\n`);
      process.exit(1);
    });
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

/** Reads one line from the process's standard input and stops reading (so the process can exit). */
async function readLineOnce(): Promise<string | null> {
  const { createInterface } = await import("node:readline");
  const rl = createInterface({ input: process.stdin, terminal: false });
  try {
    for await (const line of rl) return line;
    return null;
  } finally {
    rl.close();
  }
}
