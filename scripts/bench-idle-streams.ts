/**
 * Many idle SSE subscribers on one node (`npm run bench:idle-streams`): what they cost it, and whether a live
 * subscriber still gets its events promptly meanwhile. The compiled binary (conformance executor, SQLite),
 * tasks left waiting for input (`tck-input-required`), and one SubscribeToTask stream per task held open by a
 * client process of its own (scripts/bench/idle-subscribers.ts) over mTLS (each a TLS session with the
 * client's fleet certificate) or, with --transport plain, the loopback listener.
 * Measured: the node's RSS and open descriptors before and with the subscribers, the node's own count of open
 * streams (a2a_node_sse_streams), and the latency of a live subscriber (another task, answered round after
 * round: from the answer's request sent to its WORKING event read on the subscriber's stream), with no idle
 * subscriber and with all of them open.
 * Descriptor limits: the bench raises its own soft limit to the hard one (ulimit -n) and passes it on; the node
 * runs with --max-connections and --max-connections-per-address above the subscriber count.
 *   bun scripts/bench-idle-streams.ts [--subscribers 10000] [--transport mtls|plain] [--rounds 200] [--json]
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { clientTls, readBundle } from "./bench/rpc";
import { freePort, killAllNow, stop, track } from "./bench/proc";

const args = process.argv.slice(2);
if (!process.env.A2A_BENCH_ULIMIT) {
  // Re-run with the descriptor limit raised as far as this user may (children inherit it).
  const p = Bun.spawn(
    ["sh", "-c", 'ulimit -n "$(ulimit -Hn)" && exec "$@"', "sh", process.execPath, import.meta.path, ...args],
    {
      env: { ...process.env, A2A_BENCH_ULIMIT: "1" },
      stdio: ["inherit", "inherit", "inherit"],
    },
  );
  process.exit(await p.exited);
}

const opt = (name: string, fallback: string) => {
  const i = args.indexOf(`--${name}`);
  return i === -1 ? fallback : args[i + 1]!;
};
const N = Number(opt("subscribers", "10000"));
const TRANSPORT = opt("transport", "mtls");
const ROUNDS = Number(opt("rounds", "200"));
const JSON_OUT = args.includes("--json");
const say = (s: string) => JSON_OUT || console.error(s);

const ROOT = join(import.meta.dir, "..");
const BINARY = join(ROOT, "dist", "a2a-node");
const dir = mkdtempSync(join(tmpdir(), "a2a-bench-idle-"));
process.on("exit", () => {
  killAllNow();
  rmSync(dir, { recursive: true, force: true });
});

const limit = Number(Bun.spawnSync(["sh", "-c", "ulimit -n"]).stdout.toString().trim());
if (limit < N + 200)
  throw new Error(
    `the descriptor limit is ${limit} (ulimit -Hn); ${N} subscribers need at least ${N + 200}: lower --subscribers or raise the hard limit`,
  );

function cli(a: string[]): void {
  const r = Bun.spawnSync([BINARY, ...a], { stdout: "pipe", stderr: "pipe" });
  if (r.exitCode !== 0) throw new Error(`a2a-node ${a.join(" ")}: ${r.stderr}`);
}

const home = join(dir, "home");
cli(["--home", home, "init-pki", "--name", "bench-idle"]);
const bundlePath = join(dir, "client.json");
cli(["--home", home, "pki", "issue", "bench-client", "--out", bundlePath]);
const bundle = readBundle(bundlePath);
const tls = clientTls(bundle);
const [port, plainPort, adminPort] = [await freePort(), await freePort(), await freePort()];
const node = track(
  Bun.spawn(
    [
      BINARY,
      "--home",
      home,
      "serve",
      "--host",
      "127.0.0.1",
      "--port",
      String(port),
      "--plain-http-port",
      String(plainPort),
      "--admin-port",
      String(adminPort),
      "--executor",
      "conformance",
      "--rate-limit-per-second",
      "0",
      "--max-connections",
      String(N + 1000),
      "--max-connections-per-address",
      String(N + 1000),
      "--max-task-messages",
      String(4 * ROUNDS + 10),
      "--log-level",
      "warn",
    ],
    { stdout: "ignore", stderr: "ignore" },
  ),
);
const base = TRANSPORT === "plain" ? `http://127.0.0.1:${plainPort}/` : `https://127.0.0.1:${port}/`;
const fetchTls = TRANSPORT === "plain" ? {} : { tls: { ...tls, checkServerIdentity: () => undefined } };
for (let i = 0; ; i++) {
  try {
    if ((await fetch(`http://127.0.0.1:${adminPort}/health/live`)).ok) break;
  } catch {}
  if (i > 300 || node.exitCode !== null) throw new Error("the node did not start");
  await Bun.sleep(100);
}

async function rpc(method: string, params: unknown): Promise<any> {
  const res = await fetch(base, {
    method: "POST",
    headers: { "content-type": "application/json", "A2A-Version": "1.0" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
    ...fetchTls,
  } as RequestInit);
  const body = (await res.json()) as { result?: any; error?: unknown };
  if (!body.result) throw new Error(`${method}: ${JSON.stringify(body.error)}`);
  return body.result;
}
const asking = (taskId?: string) => ({
  message: {
    messageId: `tck-input-required-${crypto.randomUUID()}`,
    role: "ROLE_USER",
    parts: [{ text: "wait" }],
    ...(taskId ? { taskId } : {}),
  },
});

function rss(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
  return Number(m?.[1] ?? 0) * 1024;
}
const fds = (pid: number) =>
  Number(
    Bun.spawnSync(["sh", "-c", `ls /proc/${pid}/fd | wc -l`])
      .stdout.toString()
      .trim(),
  );
async function openStreams(): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${adminPort}/metrics`)).text();
  return Number(/^a2a_node_sse_streams (\d+)/m.exec(text)?.[1] ?? NaN);
}
const mib = (b: number) => Math.round((b / 1048576) * 10) / 10;
const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return Math.round(s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]! * 100) / 100;
};

say(`creating ${N + 1} tasks waiting for input (${TRANSPORT})...`);
const ids: string[] = [];
let made = 0;
await Promise.all(
  Array.from({ length: 32 }, async () => {
    while (made < N) {
      made++;
      const r = await rpc("SendMessage", asking());
      if (r.task?.status.state !== "TASK_STATE_INPUT_REQUIRED")
        throw new Error(`a task is ${r.task?.status.state}, not waiting for input`);
      ids.push(r.task.id);
    }
  }),
);
const live = (await rpc("SendMessage", asking())).task.id as string;

/** One live subscriber on `live`: each round answers it and times the answer's WORKING event on the stream. */
async function liveLatency(rounds: number): Promise<number[]> {
  const res = await fetch(base, {
    method: "POST",
    headers: { "content-type": "application/json", "A2A-Version": "1.0", accept: "text/event-stream" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "SubscribeToTask", params: { id: live } }),
    ...fetchTls,
  } as RequestInit);
  const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  const states: string[] = [];
  const waiters: { state: string; resolve(at: number): void }[] = [];
  void (async () => {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      const at = performance.now();
      buffer += value;
      let cut: number;
      while ((cut = buffer.indexOf("\n\n")) !== -1) {
        const event = buffer.slice(0, cut);
        buffer = buffer.slice(cut + 2);
        const data = event
          .split("\n")
          .filter((l) => l.startsWith("data:"))
          .map((l) => l.slice(5))
          .join("");
        if (!data) continue;
        const state = JSON.parse(data).result?.statusUpdate?.status?.state as string | undefined;
        if (!state) continue;
        states.push(state);
        const i = waiters.findIndex((w) => w.state === state);
        if (i !== -1) waiters.splice(i, 1)[0]!.resolve(at);
      }
    }
  })();
  const next = (state: string) => new Promise<number>((resolve) => waiters.push({ state, resolve }));
  const out: number[] = [];
  for (let r = 0; r < rounds; r++) {
    const working = next("TASK_STATE_WORKING");
    const waiting = next("TASK_STATE_INPUT_REQUIRED");
    const t0 = performance.now();
    const answered = rpc("SendMessage", asking(live));
    out.push((await working) - t0);
    await answered;
    await waiting;
  }
  await reader.cancel();
  return out;
}

await Bun.sleep(500);
const idleRss = rss(node.pid);
const idleFds = fds(node.pid);
say(`no idle subscriber: RSS ${mib(idleRss)} MiB; live subscriber, ${ROUNDS} rounds...`);
const alone = await liveLatency(ROUNDS);

const idsFile = join(dir, "ids.txt");
writeFileSync(idsFile, ids.join("\n"));
say(`opening ${N} idle subscribers...`);
const client = track(
  Bun.spawn(
    [
      process.execPath,
      join(import.meta.dir, "bench", "idle-subscribers.ts"),
      JSON.stringify({
        port: TRANSPORT === "plain" ? plainPort : port,
        tls: TRANSPORT === "plain" ? null : tls,
        ids: idsFile,
        parallel: 100,
      }),
    ],
    {
      stdin: "pipe",
      stdout: "pipe",
      stderr: "inherit",
    },
  ),
);
const lines = (client.stdout as ReadableStream<Uint8Array>).getReader();
const decoder = new TextDecoder();
let pending = "";
async function line(): Promise<any> {
  for (;;) {
    const cut = pending.indexOf("\n");
    if (cut !== -1) {
      const l = pending.slice(0, cut);
      pending = pending.slice(cut + 1);
      return JSON.parse(l);
    }
    const { value, done } = await lines.read();
    if (done) throw new Error("the subscriber client exited");
    pending += decoder.decode(value, { stream: true });
  }
}
const opened = await line();
say(`idle subscribers: ${JSON.stringify(opened)}`);
await Bun.sleep(2000);
const busyRss = rss(node.pid);
const busyFds = fds(node.pid);
const streams = await openStreams();
say(
  `with ${opened.ready} idle subscribers: RSS ${mib(busyRss)} MiB, ${busyFds} descriptors, ${streams} streams; live subscriber, ${ROUNDS} rounds...`,
);
const loaded = await liveLatency(ROUNDS);
client.stdin.write("status\n");
client.stdin.flush();
const still = await line();
const afterRss = rss(node.pid);
client.stdin.end();
await client.exited;
await stop(node);

const result = {
  transport: TRANSPORT,
  subscribers: {
    asked: N,
    ready: opened.ready,
    failed: opened.failed,
    connectSeconds: opened.ms / 1000,
    stillOpenAtEnd: still.open,
    errors: opened.errors,
  },
  node: {
    rssIdleMiB: mib(idleRss),
    rssWithSubscribersMiB: mib(busyRss),
    rssAfterLiveRoundsMiB: mib(afterRss),
    bytesPerSubscriber: Math.round((busyRss - idleRss) / Math.max(1, opened.ready)),
    descriptors: { idle: idleFds, withSubscribers: busyFds },
    sseStreamsMetric: streams,
  },
  liveEventLatencyMs: {
    alone: { p50: pct(alone, 50), p99: pct(alone, 99), rounds: alone.length },
    withSubscribers: { p50: pct(loaded, 50), p99: pct(loaded, 99), rounds: loaded.length },
  },
};
if (JSON_OUT) console.log(JSON.stringify(result, null, 2));
else {
  console.log(
    `\n${result.subscribers.ready} idle SubscribeToTask streams (${TRANSPORT}) on one node, opened in ${result.subscribers.connectSeconds} s (${result.subscribers.failed} failed, ${result.subscribers.stillOpenAtEnd} still open at the end)`,
  );
  console.log(
    `node RSS: ${result.node.rssIdleMiB} MiB without them, ${result.node.rssWithSubscribersMiB} MiB with them (${result.node.bytesPerSubscriber} bytes each); descriptors ${idleFds} -> ${busyFds}; a2a_node_sse_streams ${streams}`,
  );
  console.log(
    `live subscriber, answer sent -> its WORKING event read (ms): alone p50 ${result.liveEventLatencyMs.alone.p50} p99 ${result.liveEventLatencyMs.alone.p99}; with the idle subscribers p50 ${result.liveEventLatencyMs.withSubscribers.p50} p99 ${result.liveEventLatencyMs.withSubscribers.p99} (${ROUNDS} rounds each)`,
  );
}
