import { requireBinary, type ServedBinary } from "./binary";

export interface WatchedServe extends ServedBinary {
  /** Resolves with the log so far once it matches `re` (an event of the process, not a timer). */
  waitForLog(re: RegExp): Promise<string>;
  /** Sends a signal without waiting for the exit. */
  signal(signal: "SIGTERM" | "SIGKILL"): void;
}

/**
 * Like serveBinary (./binary), for tests that need to react to what the running node logs (e.g. "stopping"
 * after SIGTERM) and to signal it without waiting for it to exit.
 */
export async function serveWatched(home: string, args: string[] = [], env: Record<string, string> = {}): Promise<WatchedServe> {
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
      for (let i = waiters.length - 1; i >= 0; i--) if (waiters[i]!.re.test(log)) waiters.splice(i, 1)[0]!.resolve(log);
    }
    for (const w of waiters.splice(0)) w.reject(new Error(`a2a-node serve ended before logging ${w.re}:\n${log}`));
  })();
  void new Response(proc.stdout).text();
  const waitForLog = (re: RegExp) =>
    re.test(log) ? Promise.resolve(log) : new Promise<string>((resolve, reject) => waiters.push({ re, resolve, reject }));
  const listening = waitForLog(/serving A2A over mTLS .*listen=(https:\/\/[^\s]+)/);
  const url = await Promise.race([
    listening.then((l) => /serving A2A over mTLS .*listen=(https:\/\/[^\s]+)/.exec(l)![1]!),
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
