/**
 * Load client: keeps CONCURRENCY SendMessage calls in flight against one server over mTLS keep-alive, in its
 * own process so its CPU is not charged to the orchestrator and can be measured on its own.
 *
 *   bun scripts/bench/load.ts
 *   '{"url":"https://127.0.0.1:P/","bundle":"client.json","concurrency":16,"binding":"jsonrpc"}'
 *   (add "newConnectionEach":true to open a new mTLS connection for every request)
 *
 * It loads from the start (warm-up). The orchestrator drives the measured window through stdin:
 *   "mark\n"  start counting now (requests completing from here on)
 *   "stop\n"  stop counting, let in-flight calls finish, print one JSON line of results, exit
 * Counting by completion time inside [mark, stop) keeps the window exactly the one the orchestrator sampled
 * the server's CPU over.
 */
import { checkAnswer, clientTls, readBundle, sendMessageRequest, type Binding } from "./rpc";

interface Config {
  url: string;
  bundle: string;
  concurrency: number;
  binding: Binding;
  /** Open a new connection (full mTLS handshake) for every request instead of keeping one alive. */
  newConnectionEach?: boolean;
}

export interface LoadResult {
  requests: number;
  errors: number;
  firstError?: string;
  windowMs: number;
  /** Latency in ms of every request completed inside the window. */
  latencies: number[];
}

const config = JSON.parse(process.argv[2] ?? "") as Config;
const tls = clientTls(readBundle(config.bundle));
// `Connection: close` makes every server end the connection after its answer, and `keepalive: false` keeps Bun's
// fetch from pooling it, so each request pays for a TCP connect and a full mTLS handshake.
const connection = config.newConnectionEach ? { keepalive: false } : {};
const extraHeaders = config.newConnectionEach ? { connection: "close" } : {};
const prefix = `bench-${process.pid}-${Date.now().toString(36)}`;

let counter = 0;
let phase: "warm-up" | "measuring" | "stopping" = "warm-up";
let markedAt = 0;
let stoppedAt = 0;
const result: LoadResult = { requests: 0, errors: 0, windowMs: 0, latencies: [] };

function fail(message: string) {
  result.errors++;
  result.firstError ??= message;
}

async function worker(): Promise<void> {
  while (phase !== "stopping") {
    const n = ++counter;
    const { url, headers, body, text } = sendMessageRequest(config.binding, config.url, `${prefix}-${n}`, n);
    const started = performance.now();
    let error: string | undefined;
    try {
      const res = await fetch(url, {
        method: "POST",
        headers: { ...headers, ...extraHeaders },
        body,
        tls,
        ...connection,
      } as unknown as RequestInit);
      error = checkAnswer(res.status, await res.text(), text, config.binding);
    } catch (err) {
      error = `request failed: ${(err as Error).message}`;
    }
    const ended = performance.now();
    if (error !== undefined) {
      // Errors count wherever they happen (warm-up too): a server that fails cannot be reported as fast.
      fail(error);
      await Bun.sleep(10); // don't spin on a failing server
      continue;
    }
    if (phase === "measuring") {
      result.requests++;
      result.latencies.push(ended - started);
    }
  }
}

const workers = Array.from({ length: config.concurrency }, () => worker());

let input = "";
process.stdin.on("data", async (chunk) => {
  input += chunk.toString();
  if (phase === "warm-up" && input.includes("mark\n")) {
    markedAt = performance.now();
    phase = "measuring";
  }
  if (phase === "measuring" && input.includes("stop\n")) {
    stoppedAt = performance.now();
    phase = "stopping";
    await Promise.all(workers);
    result.windowMs = stoppedAt - markedAt;
    process.stdout.write(JSON.stringify(result) + "\n", () => process.exit(0));
  }
});
