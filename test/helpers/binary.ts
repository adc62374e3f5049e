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
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  return { code, stdout, stderr };
}

export interface ServedBinary {
  url: string;
  port: number;
  pid: number;
  /** Everything it logged so far. */
  log(): string;
  /** Resolves with the log so far once it matches `re` (an event of the process, not a timer). */
  waitForLog(re: RegExp): Promise<string>;
  /** Sends a signal without waiting for the exit. */
  signal(signal: "SIGTERM" | "SIGKILL" | "SIGHUP"): void;
  /** Sends a signal (SIGTERM by default) and waits for it to exit; resolves with the exit code. */
  stop(signal?: "SIGTERM" | "SIGKILL"): Promise<number>;
  exited: Promise<number>;
}

const LISTENING = /serving A2A over mTLS .*listen=(https:\/\/[^\s]+)/;

/**
 * Starts `a2a-node serve` from the compiled binary and resolves once it logs that it is listening (the
 * event, not a timer). Port 0 lets the OS pick; the real port is read from the log line.
 */
export async function serveBinary(home: string, args: string[] = [], env: Record<string, string> = {}): Promise<ServedBinary> {
  const proc = Bun.spawn([requireBinary(), "--home", home, "serve", "--host", "127.0.0.1", "--port", "0", ...args], {
    env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "/tmp", ...env },
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
  });
  let log = "";
  const waiters: { re: RegExp; resolve(log: string): void; reject(err: Error): void }[] = [];
  const decoder = new TextDecoder();
  const pump = (async () => {
    for await (const chunk of proc.stderr as unknown as AsyncIterable<Uint8Array>) {
      log += decoder.decode(chunk, { stream: true });
      for (let i = waiters.length - 1; i >= 0; i--) if (waiters[i].re.test(log)) waiters.splice(i, 1)[0].resolve(log);
    }
    for (const w of waiters.splice(0)) w.reject(new Error(`a2a-node serve ended before logging ${w.re}:\n${log}`));
  })();
  void new Response(proc.stdout).text();
  const waitForLog = (re: RegExp) =>
    re.test(log) ? Promise.resolve(log) : new Promise<string>((resolve, reject) => waiters.push({ re, resolve, reject }));
  const url = await Promise.race([
    waitForLog(LISTENING).then((l) => (LISTENING.exec(l) as RegExpExecArray)[1]),
    proc.exited.then(async (c) => {
      await pump;
      throw new Error(`serve exited ${c}:\n${log}`);
    }),
  ]);
  return {
    url,
    port: Number(new URL(url).port),
    pid: proc.pid,
    log: () => log,
    exited: proc.exited,
    waitForLog,
    signal: (s) => proc.kill(s),
    async stop(signal = "SIGTERM") {
      proc.kill(signal);
      return proc.exited;
    },
  };
}
