import { existsSync } from "node:fs";
import { join } from "node:path";

// import.meta.dirname, not Bun's import.meta.dir: vitest's module runner provides only the standard fields.
export const BINARY = join(import.meta.dirname, "..", "..", "dist", "a2a-node");

export function requireBinary(): string {
  if (!existsSync(BINARY)) throw new Error(`${BINARY} is missing: run 'npm run build' (npm test does it for you)`);
  return BINARY;
}

export interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs the compiled binary once and collects its output. */
export async function runBinary(args: string[], env: Record<string, string> = {}, stdin?: string): Promise<CliRun> {
  const proc = Bun.spawn([requireBinary(), ...args], {
    env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "/tmp", ...env },
    stdin: stdin === undefined ? "ignore" : new Blob([stdin]),
    stdout: "pipe",
    stderr: "pipe",
  });
  const [stdout, stderr, code] = await Promise.all([
    new Response(proc.stdout).text(),
    new Response(proc.stderr).text(),
    proc.exited,
  ]);
  return { code, stdout, stderr };
}

/** One line of the node's log (stdout, JSON when not a terminal): time, level, msg and the event's fields. */
export interface LogLine {
  time: string;
  level: "info" | "warn" | "error";
  msg: string;
  [field: string]: unknown;
}

/** What a wanted line must have: its msg (exactly, or matching), and fields equal to (or matching) these. */
export type LinePattern = { msg: string | RegExp } & Record<string, unknown>;

export interface ServedBinary {
  url: string;
  port: number;
  pid: number;
  /** Everything it logged so far, as written (JSON lines). */
  log(): string;
  /** Every log line so far, parsed. A line that is not one JSON object fails the wait that reads it. */
  lines(): LogLine[];
  /** Resolves with the first log line that matches `pattern` once it is written (an event, not a timer). */
  waitForLine(pattern: LinePattern): Promise<LogLine>;
  /** Sends a signal without waiting for the exit. */
  signal(signal: "SIGTERM" | "SIGKILL" | "SIGHUP"): void;
  /** Sends a signal (SIGTERM by default) and waits for it to exit; resolves with the exit code. */
  stop(signal?: "SIGTERM" | "SIGKILL"): Promise<number>;
  exited: Promise<number>;
  /** What it wrote on stderr (nothing, while it runs well: the log is on stdout). */
  stderr(): string;
}

/** Whether `line` has everything `pattern` asks for. */
export function matches(line: LogLine, pattern: LinePattern): boolean {
  return Object.entries(pattern).every(([k, want]) => {
    const got = line[k];
    if (want instanceof RegExp) return typeof got === "string" && want.test(got);
    return JSON.stringify(got) === JSON.stringify(want);
  });
}

/** Parses the node's stdout into log lines, strictly: every line one JSON object with time, level and msg. */
export function parseLogLine(text: string): LogLine {
  const parsed = JSON.parse(text) as LogLine;
  if (
    typeof parsed !== "object" ||
    parsed === null ||
    typeof parsed.time !== "string" ||
    typeof parsed.level !== "string" ||
    typeof parsed.msg !== "string"
  )
    throw new Error(`not a log line (time, level, msg): ${text}`);
  return parsed;
}

/**
 * Starts `a2a-node serve` from the compiled binary and resolves once it logs that it is listening (the
 * event, not a timer). Port 0 lets the OS pick; the real port is read from the log line. Its stdout is a pipe,
 * so it logs JSON, which is what these tests read.
 */
export async function serveBinary(
  home: string,
  args: string[] = [],
  env: Record<string, string> = {},
  o: { prefix?: string[] } = {},
): Promise<ServedBinary> {
  // `prefix` runs it through a program that execs it (prlimit --nofile=N --): the pid stays the node's.
  const proc = Bun.spawn(
    [...(o.prefix ?? []), requireBinary(), "--home", home, "serve", "--host", "127.0.0.1", "--port", "0", ...args],
    {
      env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "/tmp", ...env },
      stdin: "ignore",
      stdout: "pipe",
      stderr: "pipe",
    },
  );
  let log = "";
  let partial = "";
  let stderr = "";
  let broken: Error | undefined;
  const lines: LogLine[] = [];
  const waiters: { pattern: LinePattern; resolve(line: LogLine): void; reject(err: Error): void }[] = [];
  const decoder = new TextDecoder();
  const settle = () => {
    for (let i = waiters.length - 1; i >= 0; i--) {
      const w = waiters[i];
      if (broken) waiters.splice(i, 1)[0].reject(broken);
      else {
        const found = lines.find((l) => matches(l, w.pattern));
        if (found) waiters.splice(i, 1)[0].resolve(found);
      }
    }
  };
  const pump = (async () => {
    for await (const chunk of proc.stdout as unknown as AsyncIterable<Uint8Array>) {
      const text = decoder.decode(chunk, { stream: true });
      log += text;
      const parts = (partial + text).split("\n");
      partial = parts.pop() ?? "";
      for (const part of parts) {
        try {
          lines.push(parseLogLine(part));
        } catch (err) {
          broken ??= new Error(
            `a2a-node serve wrote a log line that is not JSON (${(err as Error).message}):\n${part}`,
          );
        }
      }
      settle();
    }
    for (const w of waiters.splice(0))
      w.reject(
        broken ??
          new Error(`a2a-node serve ended before logging ${JSON.stringify(w.pattern, regexText)}:\n${log}${stderr}`),
      );
  })();
  void (async () => {
    for await (const chunk of proc.stderr as unknown as AsyncIterable<Uint8Array>)
      stderr += decoder.decode(chunk, { stream: true });
  })();
  const waitForLine = (pattern: LinePattern) =>
    new Promise<LogLine>((resolve, reject) => {
      waiters.push({ pattern, resolve, reject });
      settle();
    });
  const url = await Promise.race([
    waitForLine({ msg: "serving A2A over mTLS" }).then((l) => l.listen as string),
    proc.exited.then(async (c) => {
      await pump;
      throw new Error(`serve exited ${c}:\n${log}${stderr}`);
    }),
  ]);
  return {
    url,
    port: Number(new URL(url).port),
    pid: proc.pid,
    log: () => log,
    lines: () => {
      if (broken) throw broken;
      return [...lines];
    },
    stderr: () => stderr,
    exited: proc.exited,
    waitForLine,
    signal: (s) => proc.kill(s),
    async stop(signal = "SIGTERM") {
      proc.kill(signal);
      const code = await proc.exited;
      await pump;
      return code;
    },
  };
}

function regexText(_key: string, value: unknown): unknown {
  return value instanceof RegExp ? String(value) : value;
}
