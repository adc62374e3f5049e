/**
 * How many times the compiled node syncs its SQLite files per task, at each durability level, counted by the
 * kernel: the node runs under `strace -f -e trace=fsync,fdatasync` (every thread: the checkpoint worker too),
 * and the calls made inside the measured window are set against the tasks completed in it. With
 * `durability = "fsync"` a commit is synced, and a commit carries every task written in one turn of the event
 * loop (src/store/group-commit.ts): at 1 client that is a sync or two per task, at 32 clients far fewer.
 *
 *   bun scripts/bench-fsyncs.ts [--duration S] [--warmup S] [--clients 1,32]
 * Needs strace (apt-get install strace) and the binary (npm run build). SendMessage, echo executor, mTLS.
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import type { LoadResult } from "./bench/load";
import type { Subprocess } from "bun";
import { freePort, track, stopAll } from "./bench/proc";
import { BINARY } from "./bench/servers";
import { DURABILITY_LEVELS, type Durability } from "../src/store/durability";

const { values } = parseArgs({
  options: {
    duration: { type: "string", default: "5" },
    warmup: { type: "string", default: "1" },
    clients: { type: "string", default: "1,32" },
  },
});
const durationMs = Number(values.duration) * 1000;
const warmupMs = Number(values.warmup) * 1000;
const clientCounts = values.clients!.split(",").map(Number);
if (!(durationMs > 0) || !(warmupMs >= 0) || clientCounts.some((n) => !(n >= 1)))
  throw new Error("--duration, --warmup and --clients must be positive numbers");
const LOAD = join(import.meta.dir, "bench", "load.ts");

const dir = mkdtempSync(join(tmpdir(), "a2a-bench-fsyncs-"));
const cli = (args: string[]) => {
  const r = Bun.spawnSync([BINARY, ...args], { stdout: "pipe", stderr: "pipe" });
  if (r.exitCode !== 0) throw new Error(`a2a-node ${args.join(" ")} failed: ${r.stderr.toString()}`);
};

interface Row {
  durability: Durability;
  clients: number;
  tasks: number;
  /** Sync calls inside the window: all threads, and the event loop's (the commits) alone. */
  syncs: number;
  mainSyncs: number;
}

async function measure(durability: Durability, clients: number): Promise<Row> {
  const home = join(dir, `home-${durability}-${clients}`);
  cli(["--home", home, "init-pki", "--bundle", join(dir, "node.bundle")]);
  const port = await freePort();
  const trace = join(dir, `strace-${durability}-${clients}.txt`);
  const node = track(
    Bun.spawn(
      [
        "strace",
        "-f",
        "-qq",
        "--seccomp-bpf",
        "-ttt",
        "-e",
        "trace=fsync,fdatasync",
        "-o",
        trace,
        BINARY,
        "--home",
        home,
        "serve",
        "--executor",
        "echo",
        "--host",
        "127.0.0.1",
        "--port",
        String(port),
        "--quiet",
        "--max-concurrent",
        "64",
        "--rate-limit-per-second",
        "1000000",
        "--rate-limit-burst",
        "1000000",
        "--durability",
        durability,
      ],
      { stdin: "ignore", stdout: "ignore", stderr: Bun.file(join(dir, `node-${durability}-${clients}.log`)) },
    ),
  );
  // strace's child is the node; its pid is also its main thread's, the event loop that commits.
  let nodePid = 0;
  try {
    const config = { url: `https://127.0.0.1:${port}/`, bundle: join(dir, "client.bundle"), concurrency: clients };
    await untilListening(port, node);
    nodePid = Number(readFileSync(`/proc/${node.pid}/task/${node.pid}/children`, "utf8").trim().split(/\s+/)[0]);
    const load = track(
      Bun.spawn([process.execPath, LOAD, JSON.stringify({ ...config, binding: "jsonrpc" })], {
        stdin: "pipe",
        stdout: "pipe",
        stderr: "inherit",
      }),
    );
    await Bun.sleep(warmupMs);
    const from = Date.now() / 1000;
    load.stdin.write("mark\n");
    load.stdin.flush();
    await Bun.sleep(durationMs);
    load.stdin.write("stop\n");
    load.stdin.flush();
    const until = Date.now() / 1000;
    const result = JSON.parse(await new Response(load.stdout).text()) as LoadResult;
    if (result.errors > 0) throw new Error(`${result.errors} requests failed, first: ${result.firstError}`);
    await stopNode(nodePid, node);
    // "TID EPOCH.MICROS fdatasync(FD) = 0"
    let syncs = 0;
    let mainSyncs = 0;
    for (const line of readFileSync(trace, "utf8").split("\n")) {
      const m = /^(\d+)\s+(\d+\.\d+)\s+f(?:data)?sync\(/.exec(line);
      if (!m || Number(m[2]) < from || Number(m[2]) >= until) continue;
      syncs++;
      if (Number(m[1]) === nodePid) mainSyncs++;
    }
    return { durability, clients, tasks: result.requests, syncs, mainSyncs };
  } finally {
    await stopNode(nodePid, node);
  }
}

/** SIGTERM to the node itself (strace, signalled, would detach and leave it running); strace then exits. */
async function stopNode(nodePid: number, strace: Subprocess): Promise<void> {
  if (nodePid > 0)
    try {
      process.kill(nodePid, "SIGTERM");
    } catch {} // already gone
  const timer = setTimeout(() => (nodePid > 0 ? process.kill(nodePid, "SIGKILL") : strace.kill("SIGKILL")), 5000);
  await strace.exited;
  clearTimeout(timer);
}

async function untilListening(port: number, proc: { exitCode: number | null }): Promise<void> {
  for (let i = 0; i < 1500; i++) {
    if (proc.exitCode !== null) throw new Error(`the node exited (${proc.exitCode}) before listening`);
    try {
      (await Bun.connect({ hostname: "127.0.0.1", port, socket: { data() {} } })).end();
      return;
    } catch {
      await Bun.sleep(20);
    }
  }
  throw new Error(`the node is not listening on ${port} after 30 s`);
}

const rows: Row[] = [];
try {
  cli(["--home", join(dir, "ca"), "init-pki", "--name", "bench-fsyncs"]);
  cli(["--home", join(dir, "ca"), "pki", "issue", "node", "--out", join(dir, "node.bundle")]);
  cli(["--home", join(dir, "ca"), "pki", "issue", "client", "--out", join(dir, "client.bundle")]);
  for (const durability of DURABILITY_LEVELS)
    for (const clients of clientCounts) {
      process.stderr.write(`  ${durability}, ${clients} client${clients > 1 ? "s" : ""}...\n`);
      rows.push(await measure(durability, clients));
    }
} finally {
  await stopAll();
  rmSync(dir, { recursive: true, force: true });
}

console.log(
  `\nfsync + fdatasync calls of the node (all threads, counted by strace) while SendMessage load ran, echo executor;` +
    ` ${values.duration} s after ${values.warmup} s warm-up\n`,
);
const head = ["durability", "clients", "tasks", "syncs", "syncs/task", "of which event loop", "tasks per sync"];
const body = rows.map((r) => [
  r.durability,
  String(r.clients),
  String(r.tasks),
  String(r.syncs),
  (r.syncs / r.tasks).toFixed(3),
  String(r.mainSyncs),
  r.mainSyncs > 0 ? (r.tasks / r.mainSyncs).toFixed(1) : "-",
]);
const widths = head.map((h, i) => Math.max(h.length, ...body.map((b) => b[i]!.length)));
for (const [i, line] of [head, ...body].entries()) {
  console.log(line.map((c, j) => c.padEnd(widths[j]!)).join("  "));
  if (i === 0) console.log(widths.map((w) => "-".repeat(w)).join("  "));
}
