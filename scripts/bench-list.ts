/**
 * ListTasks benchmark (`npm run bench:list`): one caller's 200 tasks of about 2 MiB each (a 1 MiB message
 * echoed into a 1 MiB artifact), listed over mTLS from another process, with the node's event-loop delay
 * and RSS measured inside the node (scripts/bench/list-server.ts).
 *   1. one ListTasks with includeArtifacts, pageSize 100: response bytes, time, node peak RSS, longest stall;
 *   2. every page of that listing walked with its nextPageToken: each task exactly once, the largest page;
 *   3. four such ListTasks at once;
 *   4. one ListTasks without artifacts (whole histories): the same bound holds;
 *   5. one ListTasks without artifacts or history (historyLength 0): 100 small tasks read among large rows.
 * Targets (issue 13): every response within max_list_bytes (256 KiB by default) plus a 4 KiB envelope; the walk returns
 * each task once; no stall of the node's event loop over 10 ms.
 * --text-bytes N sends smaller messages, so that pages hold several tasks (100000: about five to a page);
 * --max-list-bytes N runs the node with another budget (the targets then use it).
 *   bun scripts/bench-list.ts [--tasks N] [--text-bytes N] [--max-list-bytes N] [--json FILE]
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort, killAllNow, stop, track } from "./bench/proc";
import { clientTls, readBundle, RPC_HEADERS } from "./bench/rpc";
import { DEFAULT_MAX_LIST_BYTES } from "../src/store/list-budget";

const ROOT = join(import.meta.dir, "..");
const BINARY = join(ROOT, "dist", "a2a-node");
const ENVELOPE = 4096;
const arg = (name: string) => {
  const i = process.argv.indexOf(name);
  return i === -1 ? undefined : process.argv[i + 1];
};
const TASKS = Number(arg("--tasks") ?? 200);
// By default, with its JSON-RPC envelope, just under the default --max-body of 1 MiB.
const TEXT_BYTES = Number(arg("--text-bytes") ?? 1_048_000);
const BUDGET = Number(arg("--max-list-bytes") ?? DEFAULT_MAX_LIST_BYTES);

const dir = mkdtempSync(join(tmpdir(), "a2a-bench-list-"));
process.on("exit", () => {
  killAllNow();
  rmSync(dir, { recursive: true, force: true });
});
function run(args: string[]) {
  const r = Bun.spawnSync([BINARY, ...args], { stdout: "pipe", stderr: "pipe" });
  if (r.exitCode !== 0) throw new Error(`a2a-node ${args.join(" ")}: ${r.stderr}`);
}

const home = join(dir, "home");
run(["--home", home, "init-pki", "--name", "bench-list"]);
const bundle = join(dir, "client.json");
run(["--home", home, "pki", "issue", "bench-client", "--out", bundle]);
const tls = clientTls(readBundle(bundle));
const port = await freePort();
const server = track(
  Bun.spawn([process.execPath, join(import.meta.dir, "bench", "list-server.ts"), home, String(port), String(BUDGET)], {
    stdin: "pipe",
    stdout: "pipe",
    stderr: "inherit",
  }),
);

// The server's stdout, one line at a time: its banner, then one answer per command.
const lines = (server.stdout as ReadableStream<Uint8Array>).getReader();
const decoder = new TextDecoder();
let pending = "";
async function nextLine(): Promise<string> {
  for (;;) {
    const nl = pending.indexOf("\n");
    if (nl !== -1) {
      const line = pending.slice(0, nl);
      pending = pending.slice(nl + 1);
      return line;
    }
    const { value, done } = await lines.read();
    if (done) throw new Error("list server exited");
    pending += decoder.decode(value, { stream: true });
  }
}
async function command(c: "reset" | "stats"): Promise<string> {
  server.stdin.write(`${c}\n`);
  server.stdin.flush();
  return nextLine();
}
interface NodeStats {
  maxStallMs: number;
  p99StallMs: number;
  rssBytes: number;
  peakRssBytes: number;
}
const stats = async () => JSON.parse(await command("stats")) as NodeStats;

const banner = await nextLine();
if (!banner.startsWith("listening")) throw new Error(`unexpected banner: ${banner}`);
const url = `https://127.0.0.1:${port}/`;

let rpcId = 1;
async function call(method: string, params: unknown): Promise<{ bytes: number; ms: number; result: any }> {
  const started = performance.now();
  const res = await fetch(url, {
    method: "POST",
    headers: RPC_HEADERS,
    body: JSON.stringify({ jsonrpc: "2.0", id: rpcId++, method, params }),
    tls,
  } as RequestInit);
  const body = new Uint8Array(await res.arrayBuffer());
  const ms = performance.now() - started;
  const parsed = JSON.parse(new TextDecoder().decode(body));
  if (res.status !== 200 || parsed.error)
    throw new Error(`${method}: HTTP ${res.status} ${JSON.stringify(parsed.error ?? {})}`);
  return { bytes: body.byteLength, ms, result: parsed.result };
}

// Populate: TASKS blocking SendMessage calls, four at a time.
const populateStarted = performance.now();
let sent = 0;
await Promise.all(
  Array.from({ length: 4 }, async () => {
    while (sent < TASKS) {
      const n = sent++;
      const text = `task ${n} `.padEnd(TEXT_BYTES, "x");
      const { result } = await call("SendMessage", {
        message: { messageId: crypto.randomUUID(), role: "ROLE_USER", parts: [{ text }] },
        configuration: { historyLength: 0 },
      });
      if (result.task?.status?.state !== "TASK_STATE_COMPLETED")
        throw new Error(`task ${n} ended ${result.task?.status?.state}`);
    }
  }),
);
const populateMs = performance.now() - populateStarted;
process.stderr.write(`populated ${TASKS} tasks in ${Math.round(populateMs)} ms\n`);
const idle = await stats();

const listParams = { includeArtifacts: true, pageSize: 100 };
const omitted = (tasks: any[]) => tasks.filter((t) => t.metadata?.["a2a-node/omitted"]).length;

// 1. One ListTasks with artifacts.
await command("reset");
const one = await call("ListTasks", listParams);
const oneStats = await stats();

// 2. The whole listing, page by page.
await command("reset");
const seen = new Map<string, number>();
let pages = 0;
let largestPage = 0;
let walkOmitted = 0;
let token = "";
const walkStarted = performance.now();
do {
  const page = await call("ListTasks", { ...listParams, ...(token ? { pageToken: token } : {}) });
  pages++;
  largestPage = Math.max(largestPage, page.bytes);
  walkOmitted += omitted(page.result.tasks);
  for (const t of page.result.tasks) seen.set(t.id, (seen.get(t.id) ?? 0) + 1);
  token = page.result.nextPageToken;
} while (token);
const walkMs = performance.now() - walkStarted;
const walkStats = await stats();
const onceEach = seen.size === TASKS && [...seen.values()].every((n) => n === 1);

// 3. Four at once.
await command("reset");
const four = await Promise.all(Array.from({ length: 4 }, () => call("ListTasks", listParams)));
const fourStats = await stats();

// 4. Without artifacts, whole histories.
await command("reset");
const histories = await call("ListTasks", { pageSize: 100 });
const historiesStats = await stats();

// 5. Neither artifacts nor history: a full page of 100 small tasks, each row read among large ones.
await command("reset");
const heads = await call("ListTasks", { pageSize: 100, historyLength: 0 });
const headsStats = await stats();

await stop(server);

const MiB = 1024 * 1024;
const mib = (b: number) => (b >= MiB ? `${(b / MiB).toFixed(2)} MiB` : `${(b / 1024).toFixed(1)} KiB`);
const results = {
  tasks: TASKS,
  populateMs: Math.round(populateMs),
  idleRssBytes: idle.rssBytes,
  one: {
    bytes: one.bytes,
    ms: Math.round(one.ms),
    tasks: one.result.tasks.length,
    omitted: omitted(one.result.tasks),
    totalSize: one.result.totalSize,
    ...oneStats,
  },
  walk: {
    pages,
    tasksSeen: seen.size,
    onceEach,
    largestPageBytes: largestPage,
    omitted: walkOmitted,
    ms: Math.round(walkMs),
    ...walkStats,
  },
  four: { largestBytes: Math.max(...four.map((r) => r.bytes)), ...fourStats },
  histories: { bytes: histories.bytes, tasks: histories.result.tasks.length, ...historiesStats },
  heads: { bytes: heads.bytes, ms: Math.round(heads.ms), tasks: heads.result.tasks.length, ...headsStats },
};
const stall = (s: NodeStats) =>
  `longest stall ${s.maxStallMs.toFixed(1)} ms (p99 ${s.p99StallMs.toFixed(1)} ms), node peak RSS ${mib(s.peakRssBytes)}`;
console.log(
  `populate          ${TASKS} tasks of ${mib(2 * TEXT_BYTES)} in ${results.populateMs} ms; node RSS idle ${mib(idle.rssBytes)}`,
);
console.log(
  `one list          ${mib(one.bytes)}, ${one.result.tasks.length} tasks (${results.one.omitted} with parts omitted), totalSize ${one.result.totalSize}, ${results.one.ms} ms; ${stall(oneStats)}`,
);
console.log(
  `walk all pages    ${pages} pages, ${seen.size} distinct tasks (each once: ${onceEach}), largest page ${mib(largestPage)}, ${results.walk.ms} ms; ${stall(walkStats)}`,
);
console.log(`four at once      largest ${mib(results.four.largestBytes)}; ${stall(fourStats)}`);
console.log(
  `no artifacts      ${mib(histories.bytes)}, ${histories.result.tasks.length} tasks; ${stall(historiesStats)}`,
);
console.log(
  `historyLength 0   ${mib(heads.bytes)}, ${heads.result.tasks.length} tasks, ${results.heads.ms} ms; ${stall(headsStats)}`,
);
const verdict = (ok: boolean) => (ok ? "PASS" : "FAIL");
const largest = Math.max(one.bytes, largestPage, results.four.largestBytes, histories.bytes, heads.bytes);
const maxStall = Math.max(
  oneStats.maxStallMs,
  walkStats.maxStallMs,
  fourStats.maxStallMs,
  historiesStats.maxStallMs,
  headsStats.maxStallMs,
);
console.log("\ntargets");
console.log(
  `${verdict(largest <= BUDGET + ENVELOPE)}  every response <= ${mib(BUDGET)} + 4 KiB${" ".repeat(Math.max(1, 16 - mib(BUDGET).length))}${mib(largest)}`,
);
console.log(`${verdict(onceEach)}  the page walk returns each task once     ${seen.size} of ${TASKS}`);
console.log(`${verdict(maxStall <= 10)}  no event-loop stall over 10 ms           ${maxStall.toFixed(1)} ms`);
const jsonAt = process.argv.indexOf("--json");
if (jsonAt !== -1) writeFileSync(process.argv[jsonAt + 1], JSON.stringify(results, null, 2));
process.exit(0);
