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
  /** SIGTERM, and wait for it to exit; resolves with the exit code. */
  stop(signal?: "SIGTERM" | "SIGKILL"): Promise<number>;
  exited: Promise<number>;
}

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
  const decoder = new TextDecoder();
  const ready = new Promise<string>((resolve, reject) => {
    void (async () => {
      for await (const chunk of proc.stderr as unknown as AsyncIterable<Uint8Array>) {
        log += decoder.decode(chunk, { stream: true });
        const m = /serving A2A over mTLS .*listen=(https:\/\/[^\s]+)/.exec(log);
        if (m) resolve(m[1]);
      }
      reject(new Error(`a2a-node serve exited before listening:\n${log}`));
    })();
  });
  const url = await Promise.race([ready, proc.exited.then((c) => Promise.reject(new Error(`serve exited ${c}:\n${log}`)))]);
  return {
    url,
    port: Number(new URL(url).port),
    pid: proc.pid,
    log: () => log,
    exited: proc.exited,
    async stop(signal = "SIGTERM") {
      proc.kill(signal);
      return proc.exited;
    },
  };
}
