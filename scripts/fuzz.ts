/**
 * A bounded, seeded fuzzer for a2a-node: it starts the compiled binary on loopback (echo executor, mTLS
 * listener and the plain loopback listener, a fresh home), sends it mutated requests (JSON-RPC, HTTP+JSON,
 * HTTP framing, incomplete requests), each over its own connection, and counts what comes back per class of
 * input: answers by status, JSON-RPC and HTTP+JSON error codes,
 * connections closed without an answer, hangs, crashes (the node is restarted and the run goes on), 5xx, and
 * after the run, leaks (RSS, descriptors and connections against the warmed-up node, tasks left unfinished
 * or lost). The node must then still answer a SendMessage correctly on both listeners and stop cleanly.
 *
 *   npm run fuzz [-- --seed N] [--requests N] [--concurrency N] [--json] ...   (see --help)
 *
 * Input N is a function of (seed, N) alone: the same seed gives the same inputs in any run (--json prints
 * their hash), and `--replay N` sends input N again to a fresh node. Exit 0 when nothing failed, 1 when
 * something did (samples go to --samples FILE), 2 on a usage error.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { createHash } from "node:crypto";
import { checkIdleNode, takeBaseline } from "./fuzz/idle-checks";
import { generateInput, inputDigest, isIncomplete, type FuzzInput } from "./fuzz/input";
import { buildReport, escapeBytes, FAILURE_KINDS, formatReport, Tally } from "./fuzz/report";
import { FuzzSession } from "./fuzz/session";
import { NODE_TIMEOUTS_MS, ROOT } from "./fuzz/target";
import { render } from "./fuzz/tokens";

const HELP = `a2a-node fuzz: mutated requests against the compiled binary on loopback, counted by outcome.

usage: npm run fuzz -- [options]

  --seed N              inputs are a function of seed and index (default 1)
  --requests N          inputs to send (default 10000; the issue's report needs at least 10000)
  --concurrency N       complete inputs in flight at once (default 16)
  --slow-concurrency N  incomplete inputs in flight at once; each waits for the node's own timer, 10-65 s (default 24)
  --skip-slow           leave the incomplete inputs out (they are still generated and hashed)
  --warmup N            inputs of another seed sent first, not counted, before the baseline is taken (default 300)
  --hang-timeout S      no answer and no close for this long is a hang (default 5)
  --max-body BYTES      the node's --max-body (default 1048576)
  --rss-limit MIB       RSS growth over the warmed-up node that counts as a leak (default 128)
  --replay N[,N...]     send only these inputs, one at a time, and print each with its outcome
  --dry-run             only generate the inputs: print their hash and count, start no node
  --samples FILE        where samples of failures go (default fuzz-failures-seed<N>.json, written only on failure)
  --json                print the report as JSON on stdout (progress stays on stderr)
  --keep                keep the temp dir (node home, log, database)

example:
  npm run fuzz -- --requests 10000 --seed 1
  npm run fuzz -- --seed 1 --replay 4711

exit codes: 0 nothing failed, 1 a crash, hang, unexpected 5xx, leak or other failure (see the table), 2 usage`;

const { values: flags } = parseArgs({
  options: {
    seed: { type: "string", default: "1" },
    requests: { type: "string", default: "10000" },
    concurrency: { type: "string", default: "16" },
    "slow-concurrency": { type: "string", default: "24" },
    "skip-slow": { type: "boolean", default: false },
    "hang-timeout": { type: "string", default: "5" },
    warmup: { type: "string", default: "300" },
    "max-body": { type: "string", default: "1048576" },
    "rss-limit": { type: "string", default: "128" },
    replay: { type: "string" },
    "dry-run": { type: "boolean", default: false },
    samples: { type: "string" },
    json: { type: "boolean", default: false },
    keep: { type: "boolean", default: false },
    help: { type: "boolean", default: false },
  },
});
if (flags.help) {
  console.log(HELP);
  process.exit(0);
}
const int = (name: keyof typeof flags, min: number): number => {
  const v = Number(flags[name]);
  if (!Number.isInteger(v) || v < min) usage(`--${name} must be a whole number from ${min} up (got '${flags[name]}')`);
  return v;
};
function usage(message: string): never {
  console.error(`fuzz: ${message}\n\n${HELP}`);
  process.exit(2);
}
const seed = int("seed", 0);
const requests = int("requests", 1);
const concurrency = int("concurrency", 1);
const slowConcurrency = int("slow-concurrency", 1);
const hangMs = int("hang-timeout", 1) * 1000;
const warmupInputs = int("warmup", 0);
const maxBody = int("max-body", 1024);
const rssLimitBytes = int("rss-limit", 1) * 1024 * 1024;
const replay = flags.replay?.split(",").map((s) => {
  const n = Number(s.trim());
  if (!Number.isInteger(n) || n < 0) usage(`--replay takes input indices, e.g. 4711 or 3,17 (got '${s}')`);
  return n;
});
const gen = { maxBody };
const progress = (line: string) => process.stderr.write(`${line}\n`);

/** Digests of the inputs, by index; the run's hash is over them in index order, whatever order they went in. */
const digests = new Map<number, Buffer>();
function generate(index: number): FuzzInput {
  const input = generateInput(seed, index, gen);
  digests.set(index, inputDigest(input));
  return input;
}
function inputsHash(indices: number[]): string {
  const h = createHash("sha256");
  for (const i of indices) h.update(digests.get(i) ?? inputDigest(generate(i)));
  return h.digest("hex");
}

if (flags["dry-run"]) {
  const indices = replay ?? Array.from({ length: requests }, (_, i) => i);
  const families: Record<string, number> = {};
  let largestInputBytes = 0;
  for (const i of indices) {
    const input = generate(i);
    families[input.family] = (families[input.family] ?? 0) + 1;
    largestInputBytes = Math.max(
      largestInputBytes,
      input.pieces.reduce((n, p) => n + p.bytes.length, 0),
    );
  }
  const hash = inputsHash(indices);
  if (flags.json)
    console.log(JSON.stringify({ seed, requests: indices.length, inputsHash: hash, families, largestInputBytes }));
  else
    console.log(
      `seed ${seed}: ${indices.length} inputs, hash ${hash}, ${JSON.stringify(families)}, largest ${largestInputBytes} bytes`,
    );
  process.exit(0);
}

// ---------------------------------------------------------------------------------------------------------------

// Its output goes to stderr: stdout is the report's alone (--json).
const build = Bun.spawnSync([process.execPath, join(ROOT, "scripts", "build.ts"), "--if-stale"], {
  stdio: ["inherit", "pipe", "inherit"],
});
process.stderr.write(build.stdout);
if (build.exitCode !== 0) {
  console.error("fuzz: building dist/a2a-node failed");
  process.exit(1);
}

const dir = mkdtempSync(join(tmpdir(), "a2a-fuzz-"));
const tally = new Tally(seed);
const session = new FuzzSession({ dir, gen, hangMs, tally, progress });

async function main(): Promise<number> {
  const indices = Array.from({ length: requests }, (_, i) => i);
  const slow = indices.filter((i) => isIncomplete(seed, i));
  const fast = indices.filter((i) => !isIncomplete(seed, i));
  // The longest waits first, so they overlap the rest of the run instead of trailing it.
  const order = { idle: 0, request: 1, handshake: 2 } as const;
  const timer = new Map(slow.map((i) => [i, order[generate(i).nodeTimeout!]]));
  slow.sort((a, b) => timer.get(a)! - timer.get(b)! || a - b);
  progress(
    `fuzz: seed ${seed}, ${indices.length} inputs (${slow.length} incomplete${flags["skip-slow"] ? ", skipped" : ""}); temp dir ${dir}`,
  );

  await session.start();
  await session.warmUp(seed, warmupInputs);
  await session.settle(undefined, NODE_TIMEOUTS_MS.idle + hangMs);
  const baseline = takeBaseline(session);
  const b = baseline.stats;
  progress(
    `fuzz: warmed up (pid ${baseline.pid}, RSS ${(b.rssBytes / 2 ** 20).toFixed(0)} MiB, ${b.fds} fds, ${b.sockets} sockets)`,
  );

  const started = performance.now();
  let done = 0;
  const total = fast.length + (flags["skip-slow"] ? 0 : slow.length);
  const tick = () => {
    if (++done % 1000 !== 0 && done !== total) return;
    const failing = FAILURE_KINDS.filter((k) => tally.failures[k]).map((k) => `${k} ${tally.failures[k]}`);
    progress(
      `fuzz: ${done}/${total} (${((performance.now() - started) / 1000).toFixed(0)} s, failures: ${failing.join(", ") || "none"})`,
    );
  };
  if (flags["skip-slow"]) tally.skipped = slow.length;
  const lanes = [session.lane(fast, concurrency, generate, tick)];
  if (!flags["skip-slow"]) lanes.push(session.lane(slow, slowConcurrency, generate, tick));
  try {
    await Promise.all(lanes);
  } catch (err) {
    tally.fail("crash", (err as Error).message);
  }
  await Promise.all(session.late);
  const runS = (performance.now() - started) / 1000;
  progress(`fuzz: inputs done in ${runS.toFixed(0)} s; checking the idle node`);
  if (!session.node.running)
    throw new Error(`the node is down after ${session.crashes.length} crashes; log: ${session.logPath}`);

  const idle = await checkIdleNode(session, baseline, { tally, hangMs, rssLimitBytes, seed, generate, progress });
  const settings = {
    seed,
    requests,
    concurrency,
    slowConcurrency,
    hangTimeoutS: hangMs / 1000,
    maxBody,
    skipSlow: flags["skip-slow"]!,
  };
  const hash = inputsHash(indices);
  const report = buildReport(tally, settings, hash, runS, idle, session.crashes);
  if (tally.failed) {
    const path = resolve(flags.samples ?? `fuzz-failures-seed${seed}.json`);
    writeFileSync(
      path,
      JSON.stringify(
        { seed, inputsHash: hash, samples: tally.samples, nodeErrors: idle.nodeErrorLines.slice(0, 20) },
        null,
        2,
      ) + "\n",
    );
    report.samplesFile = path;
  }
  console.log(flags.json ? JSON.stringify(report, null, 2) : formatReport(report, tally, idle.nodeErrorLines[0]));
  return tally.failed ? 1 : 0;
}

/** --replay: each input alone, on a fresh node, printed with what the node did. */
async function replayMain(indices: number[]): Promise<number> {
  await session.start();
  for (const i of indices) {
    const input = generate(i);
    const r = await session.runOne(input, true);
    const node = session.node;
    console.log(
      `\ninput ${i}: ${input.family}/${input.listener} via ${input.transport}, expect ${input.expect}${input.nodeTimeout ? ` (${input.nodeTimeout} timer)` : ""}, labels ${input.labels.join(" ")}`,
    );
    for (const p of input.pieces)
      console.log(
        `  send${p.pauseMs ? ` after ${p.pauseMs} ms` : ""}: ${escapeBytes(render(p.bytes, session.runtime(node, input.listener)), 2000)}`,
      );
    if (!r) {
      console.log("  (the node crashed)");
      continue;
    }
    const o = r.outcome;
    console.log(
      `  end: ${o.end} after ${Math.round(o.ms)} ms${o.error ? ` (${o.error})` : ""}; statuses ${r.verdict.statuses.join(",") || "-"}; JSON-RPC ${r.verdict.rpc.join(",") || "-"}`,
    );
    for (const a of o.answers) console.log(`  answer ${a.status}: ${escapeBytes(a.body, 600)}`);
    if (r.verdict.findings.length) console.log(`  FINDINGS: ${r.verdict.findings.join(", ")}: ${r.verdict.detail}`);
  }
  await Promise.all(session.late);
  return tally.failed ? 1 : 0;
}

let code = 1;
try {
  code = replay ? await replayMain(replay) : await main();
} catch (err) {
  console.error(`fuzz: ${(err as Error).stack ?? err}`);
} finally {
  await session.stop(3000);
  if (flags.keep) progress(`fuzz: kept ${dir}`);
  else rmSync(dir, { recursive: true, force: true });
}
process.exit(code);
