/**
 * What one caller can make a node hold, measured on the compiled binary over mutual TLS from one fleet member
 * on one address, as issue 20's probe did:
 *
 *   memory  one task grown by the caller (conformance executor: every tck-input-required message is answered
 *           with another question) with messages of ~1 MB until the node refuses more (max_task_bytes) or it
 *           reaches --task-mb; then --subscribers SubscribeToTask streams that never read, then --readers
 *           GetTask calls read normally, at once. Node RSS idle, with the stalled streams, and its peak.
 *   disk    --clients connections send echo tasks of ~1.9 MB (a ~0.95 MB message and its echo) as fast as the
 *           node takes them, for --seconds; the bytes the home's database takes on disk, tasks taken, refusals
 *           by limit.
 *
 *   npm run bench:caller-limits -- memory [--subscribers 60] [--readers 10] [--task-mb 50] [--binary PATH] [--serve
 *   "ARGS"] [--json FILE] npm run bench:caller-limits -- disk [--seconds 60] [--clients 4] [--binary PATH] [--serve
 *   "ARGS"] [--json FILE]
 *
 * TRACE=1 prints the node's RSS and the answer bytes it holds every 2 s while the readers read.
 * --serve adds flags to `serve` (e.g. "--max-task-bytes 67108864" to measure a 50 MB task past the default
 * cap); --binary runs another build (an older one, for a before-and-after). Exit 0 when measured, 1 if
 * something broke, 2 on a usage error.
 */
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { once } from "node:events";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { connect as tlsConnect, type TLSSocket } from "node:tls";
import { BINARY } from "./bench/servers";
import { clientTls, readBundle, type ClientTls } from "./bench/rpc";
import { freePort } from "./bench/proc";

const HELP = `a2a-node bench:caller-limits: what one caller can make a node hold (memory, disk).

usage: npm run bench:caller-limits -- memory|disk [options]

  memory: --subscribers N (60)  --readers N (10)  --task-mb N (50)  --message-kb N (1000)
  disk:   --seconds S (60)  --clients N (4)  --message-kb N (950)
  both:   --binary PATH (dist/a2a-node)  --serve "FLAGS" (added to serve)  --json FILE

example:
  npm run bench:caller-limits -- memory --subscribers 60
  npm run bench:caller-limits -- memory --serve "--max-task-bytes 67108864"
  npm run bench:caller-limits -- disk --seconds 60

exit codes: 0 measured, 1 something broke, 2 usage`;

const { values: flags, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    subscribers: { type: "string", default: "60" },
    readers: { type: "string", default: "10" },
    "task-mb": { type: "string", default: "50" },
    "message-kb": { type: "string" },
    seconds: { type: "string", default: "60" },
    clients: { type: "string", default: "4" },
    binary: { type: "string", default: BINARY },
    serve: { type: "string", default: "" },
    json: { type: "string" },
    help: { type: "boolean", default: false },
  },
});
if (flags.help) {
  console.log(HELP);
  process.exit(0);
}
const mode = positionals[0];
function usage(message: string): never {
  console.error(`bench:caller-limits: ${message}\n\n${HELP}`);
  process.exit(2);
}
if (mode !== "memory" && mode !== "disk") usage("say what to measure: memory or disk");
const int = (name: keyof typeof flags, fallback?: string): number => {
  const v = Number(flags[name] ?? fallback);
  if (!Number.isInteger(v) || v < 1) usage(`--${name} must be a whole number from 1 up (got '${flags[name]}')`);
  return v;
};
const MIB = 1024 * 1024;
const mib = (b: number) => `${(b / MIB).toFixed(0)} MiB`;

const dir = mkdtempSync(join(tmpdir(), "a2a-caller-limits-"));
const binary = flags.binary!;
function run(args: string[]): void {
  const r = Bun.spawnSync([binary, ...args], { stdout: "pipe", stderr: "pipe" });
  if (r.exitCode !== 0)
    throw new Error(`a2a-node ${args.join(" ")} failed: ${r.stderr.toString() || r.stdout.toString()}`);
}

/** A home for the node, and a fleet member's identity for the one caller. */
function pki(): { home: string; tls: ClientTls } {
  const home = join(dir, "home");
  run(["--home", home, "init-pki", "--name", "probe-node"]);
  const bundle = join(dir, "caller.bundle.json");
  run(["--home", home, "pki", "issue", "probe-caller", "--out", bundle]);
  return { home, tls: clientTls(readBundle(bundle)) };
}

async function serve(
  home: string,
  executor: string,
): Promise<{ url: string; port: number; pid: number; stop(): Promise<void> }> {
  const port = await freePort();
  const extra = flags.serve ? flags.serve.split(/\s+/).filter(Boolean) : [];
  const proc = Bun.spawn(
    [
      binary,
      "--home",
      home,
      "serve",
      "--executor",
      executor,
      "--host",
      "127.0.0.1",
      "--port",
      String(port),
      "--log-format",
      "json",
      ...extra,
    ],
    {
      stdin: "ignore",
      stdout: "pipe",
      stderr: "inherit",
    },
  );
  // Its log is read to the end (a pipe nobody reads would stall it): the start is seen on the way.
  let log = "";
  let started!: () => void;
  const serving = new Promise<void>((r) => (started = r));
  const decoder = new TextDecoder();
  const reading = (async () => {
    for await (const chunk of proc.stdout as unknown as AsyncIterable<Uint8Array>) {
      if (log.length < 1_000_000) log += decoder.decode(chunk, { stream: true });
      if (log.includes("serving A2A over mTLS")) started();
    }
  })();
  await Promise.race([
    serving,
    reading.then(() => proc.exited).then((c) => Promise.reject(new Error(`serve exited ${c} before serving:\n${log}`))),
  ]);
  return {
    url: `https://127.0.0.1:${port}`,
    port,
    pid: proc.pid,
    async stop() {
      proc.kill("SIGTERM");
      await proc.exited;
    },
  };
}

const rssOf = (pid: number, field = "VmRSS") =>
  Number(new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(readFileSync(`/proc/${pid}/status`, "utf8"))![1]) * 1024;

async function rpc(url: string, tls: ClientTls, method: string, params: unknown) {
  const res = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json", "a2a-version": "1.0" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
    tls,
    // A connection of its own each time: one kept from minutes before may have been closed as idle.
    keepalive: false,
  } as RequestInit);
  const text = await res.text();
  return {
    status: res.status,
    text,
    json: JSON.parse(text) as {
      result?: any;
      error?: { code: number; message: string; data?: { metadata?: Record<string, string> }[] };
    },
  };
}

/** RSS once it stops moving: sampled twice a second until three samples agree within 1% (at most 30 s). */
async function settledRss(pid: number): Promise<number> {
  const samples: number[] = [];
  for (let i = 0; i < 60; i++) {
    samples.push(rssOf(pid));
    const last = samples.slice(-3);
    if (last.length === 3 && Math.max(...last) - Math.min(...last) < 0.01 * Math.max(...last)) break;
    await Bun.sleep(500);
  }
  return samples[samples.length - 1];
}

/** A connection that asks for `body` and never reads the answer. */
async function stalled(port: number, tls: ClientTls, body: string): Promise<TLSSocket> {
  const socket = tlsConnect({
    host: "127.0.0.1",
    port,
    cert: tls.cert,
    key: tls.key,
    ca: tls.ca,
    servername: "probe-node",
  });
  socket.on("error", () => {});
  await once(socket, "secureConnect");
  socket.pause();
  socket.write(
    `POST / HTTP/1.1\r\nHost: probe\r\nContent-Type: application/json\r\nA2A-Version: 1.0\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
  );
  return socket;
}

async function memory(): Promise<Record<string, unknown>> {
  const { home, tls } = pki();
  const node = await serve(home, "conformance");
  try {
    const messageBytes = int("message-kb", "1000") * 1000;
    const target = int("task-mb") * MIB;
    const grow = (taskId?: string) =>
      rpc(node.url, tls, "SendMessage", {
        message: {
          messageId: `tck-input-required-${crypto.randomUUID()}`,
          role: "ROLE_USER",
          parts: [{ text: "x".repeat(messageBytes) }],
          ...(taskId ? { taskId } : {}),
        },
        configuration: { historyLength: 0 },
      });
    const first = await grow();
    const taskId = first.json.result?.task?.id as string;
    if (!taskId) throw new Error(`the first message was not taken: ${first.text.slice(0, 300)}`);
    let messages = 1;
    let stoppedBy = `--task-mb ${target / MIB}`;
    while (messages * messageBytes < target) {
      const r = await grow(taskId);
      if (r.json.error) {
        stoppedBy = r.json.error.message;
        break;
      }
      messages++;
    }
    const whole = await fetch(node.url, {
      method: "POST",
      headers: { "content-type": "application/json", "a2a-version": "1.0" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "GetTask", params: { id: taskId } }),
      tls,
      keepalive: false,
    } as RequestInit);
    const taskBytes = (await whole.arrayBuffer()).byteLength;
    process.stderr.write(`memory: task of ${mib(taskBytes)} (${messages} messages; stopped by: ${stoppedBy})\n`);
    const idle = await settledRss(node.pid);

    const subscribers = int("subscribers");
    const sockets: TLSSocket[] = [];
    for (let i = 0; i < subscribers; i++)
      sockets.push(
        await stalled(
          node.port,
          tls,
          JSON.stringify({ jsonrpc: "2.0", id: i, method: "SubscribeToTask", params: { id: taskId } }),
        ),
      );
    const withStalled = await settledRss(node.pid);
    const peakStalled = rssOf(node.pid, "VmHWM");
    let held: number | undefined;
    try {
      const m = await (await fetch(`${node.url}/metrics`, { tls, keepalive: false } as RequestInit)).text();
      const line = /^a2a_node_answer_bytes_held (\d+)/m.exec(m);
      held = line ? Number(line[1]) : undefined;
    } catch {}
    process.stderr.write(`memory: ${subscribers} stalled subscribers: RSS ${mib(withStalled)} (idle ${mib(idle)})\n`);
    for (const s of sockets) s.destroy();
    await settledRss(node.pid);

    writeFileSync(`/proc/${node.pid}/clear_refs`, "5"); // VmHWM starts again from the current RSS
    const trace = process.env.TRACE
      ? setInterval(async () => {
          let h = "?";
          try {
            h =
              /^a2a_node_answer_bytes_held (\d+)/m.exec(
                await (await fetch(`${node.url}/metrics`, { tls, keepalive: false } as RequestInit)).text(),
              )?.[1] ?? "?";
          } catch {}
          process.stderr.write(`trace: rss ${mib(rssOf(node.pid))} held ${h}\n`);
        }, 2000)
      : undefined;
    const readers = int("readers");
    const started = performance.now();
    // Each on a connection of its own; one the node could not serve in time (a TLS handshake it had no turn
    // for while it built large answers, on a loaded machine) is reported, not fatal.
    const results = await Promise.all(
      Array.from({ length: readers }, async () => {
        try {
          const res = await fetch(node.url, {
            method: "POST",
            headers: { "content-type": "application/json", "a2a-version": "1.0" },
            body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "GetTask", params: { id: taskId } }),
            tls,
            keepalive: false,
          } as RequestInit);
          return { status: String(res.status), bytes: (await res.arrayBuffer()).byteLength };
        } catch (err) {
          return { status: (err as Error).message.split(":")[0], bytes: 0 };
        }
      }),
    );
    const readMs = performance.now() - started;
    clearInterval(trace);
    const peakReaders = rssOf(node.pid, "VmHWM");
    return {
      mode: "memory",
      binary,
      serve: flags.serve,
      task: { bytes: taskBytes, messages, stoppedBy },
      rss: {
        idle,
        withStalledSubscribers: withStalled,
        peakWithStalledSubscribers: peakStalled,
        peakWithReaders: peakReaders,
      },
      subscribers,
      perStalledSubscriberBytes: Math.round((withStalled - idle) / subscribers),
      answerBytesHeld: held,
      readers: {
        n: readers,
        statuses: results.map((r) => r.status),
        bytesEach: results.find((r) => r.bytes)?.bytes,
        ms: Math.round(readMs),
      },
    };
  } finally {
    await node.stop();
  }
}

/** The bytes the home's database takes: the file, its WAL and shared memory. */
function databaseBytes(home: string): number {
  let n = 0;
  for (const f of ["a2a-node.db", "a2a-node.db-wal", "a2a-node.db-shm"])
    n += statSync(join(home, f), { throwIfNoEntry: false })?.size ?? 0;
  return n;
}

async function disk(): Promise<Record<string, unknown>> {
  const { home, tls } = pki();
  const node = await serve(home, "echo");
  try {
    const seconds = int("seconds");
    const text = "d".repeat(int("message-kb", "950") * 1000);
    const before = databaseBytes(home);
    const until = performance.now() + seconds * 1000;
    const counts = { taken: 0, refused: {} as Record<string, number>, firstRefusalS: undefined as number | undefined };
    const started = performance.now();
    let peak = before;
    const watch = setInterval(() => (peak = Math.max(peak, databaseBytes(home))), 250);
    await Promise.all(
      Array.from({ length: int("clients") }, async () => {
        while (performance.now() < until) {
          const r = await rpc(node.url, tls, "SendMessage", {
            message: { messageId: crypto.randomUUID(), role: "ROLE_USER", parts: [{ text }] },
            configuration: { historyLength: 0 },
          });
          if (r.json.result) counts.taken++;
          else {
            const limit = r.json.error?.data?.[0]?.metadata?.limit ?? `${r.status} ${r.json.error?.code}`;
            counts.refused[limit] = (counts.refused[limit] ?? 0) + 1;
            counts.firstRefusalS ??= Math.round((performance.now() - started) / 100) / 10;
            // Refused for the rate limit: wait as told; for a quota: go on asking, as a flood would.
            if (r.status === 429 && limit === "rate") await Bun.sleep(100);
          }
        }
      }),
    );
    clearInterval(watch);
    const after = databaseBytes(home);
    process.stderr.write(
      `disk: ${counts.taken} tasks taken in ${seconds} s, database ${mib(before)} -> ${mib(after)} (peak ${mib(peak)}), refused ${JSON.stringify(counts.refused)}\n`,
    );
    return {
      mode: "disk",
      binary,
      serve: flags.serve,
      seconds,
      messageBytes: text.length,
      databaseBytes: { before, after, peak },
      ...counts,
    };
  } finally {
    await node.stop();
  }
}

let code = 1;
try {
  const report = mode === "memory" ? await memory() : await disk();
  console.log(JSON.stringify(report, null, 2));
  if (flags.json) writeFileSync(flags.json, `${JSON.stringify(report, null, 2)}\n`);
  code = 0;
} catch (err) {
  console.error(`bench:caller-limits: ${(err as Error).stack ?? err}`);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
process.exit(code);
