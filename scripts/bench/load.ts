/**
 * Load client: keeps CONCURRENCY SendMessage calls in flight against one server over mTLS keep-alive, in its
 * own process so its CPU is not charged to the orchestrator and can be measured on its own.
 *
 *   bun scripts/bench/load.ts '{"url":"https://127.0.0.1:P/","bundle":"client.json","concurrency":16,"verifyEvery":10}'
 *
 * It loads from the start (warm-up). The orchestrator drives the measured window through stdin:
 *   "mark\n"  start counting now (requests completing from here on)
 *   "stop\n"  stop counting, let in-flight calls finish, print one JSON line of results, exit
 * Counting by completion time inside [mark, stop) keeps the window exactly the one the orchestrator sampled
 * the server's CPU over.
 */
import { checkAnswer, clientTls, readBundle, RPC_HEADERS, sendMessageBody } from "./rpc";

interface Config {
  url: string;
  bundle: string;
  concurrency: number;
  /** Parse and fully verify every Nth answer; all others get the cheap check. */
  verifyEvery: number;
}

export interface LoadResult {
  requests: number;
  errors: number;
  firstError?: string;
  fullyVerified: number;
  windowMs: number;
  /** Latency in ms of every request completed inside the window. */
  latencies: number[];
}

const config = JSON.parse(process.argv[2] ?? "") as Config;
const tls = clientTls(readBundle(config.bundle));
const prefix = `bench-${process.pid}-${Date.now().toString(36)}`;

let counter = 0;
let measuring = false;
let stopping = false;
let markedAt = 0;
let stoppedAt = 0;
const result: LoadResult = { requests: 0, errors: 0, fullyVerified: 0, windowMs: 0, latencies: [] };

function fail(message: string) {
  result.errors++;
  result.firstError ??= message;
}

async function worker(): Promise<void> {
  while (!stopping) {
    const n = ++counter;
    const { body, text } = sendMessageBody(`${prefix}-${n}`, n);
    const full = n % config.verifyEvery === 0;
    const started = performance.now();
    let error: string | undefined;
    try {
      const res = await fetch(config.url, { method: "POST", headers: RPC_HEADERS, body, tls } as RequestInit);
      error = checkAnswer(res.status, await res.text(), text, full);
    } catch (err) {
      error = `request failed: ${(err as Error).message}`;
    }
    const ended = performance.now();
    if (error !== undefined) {
      // Errors count wherever they happen (warm-up too): a server that fails cannot be reported as fast.
      fail(error);
      if (!measuring) await Bun.sleep(10); // e.g. not listening yet; don't spin
      continue;
    }
    if (measuring && ended >= markedAt) {
      result.requests++;
      result.latencies.push(ended - started);
      if (full) result.fullyVerified++;
    }
  }
}

const workers = Array.from({ length: config.concurrency }, () => worker());

let input = "";
process.stdin.on("data", async (chunk) => {
  input += chunk.toString();
  if (!measuring && input.includes("mark\n")) {
    markedAt = performance.now();
    measuring = true;
  }
  if (!stopping && input.includes("stop\n")) {
    stoppedAt = performance.now();
    measuring = false;
    stopping = true;
    await Promise.all(workers);
    result.windowMs = stoppedAt - markedAt;
    process.stdout.write(JSON.stringify(result) + "\n", () => process.exit(0));
  }
});
