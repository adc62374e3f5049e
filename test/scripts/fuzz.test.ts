/**
 * scripts/fuzz.ts: a seed fixes the inputs, and a small run against the compiled binary finds nothing wrong
 * (the full run, 10,000 inputs, is `npm run fuzz`; its numbers go in the issue, not in a test).
 */
import { mkdtempSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { requireBinary } from "../helpers/binary";
import { FuzzSession } from "../../scripts/fuzz/session";
import { Tally } from "../../scripts/fuzz/report";
import { get } from "../../scripts/fuzz/calls";
import { tempDir } from "../helpers/temp-dir";

const ROOT = join(import.meta.dirname, "..", "..");
const FUZZ = join(ROOT, "scripts", "fuzz.ts");
const dir = tempDir("a2a-fuzz-test-");

async function fuzz(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const proc = Bun.spawn([process.execPath, FUZZ, ...args], { cwd: dir, stdout: "pipe", stderr: "pipe" });
  const [stdout, stderr, code] = await Promise.all([
    new Response(proc.stdout).text(),
    new Response(proc.stderr).text(),
    proc.exited,
  ]);
  return { code, stdout, stderr };
}

async function dryRun(seed: number, requests: number, extra: string[] = []) {
  const r = await fuzz(["--dry-run", "--json", "--seed", String(seed), "--requests", String(requests), ...extra]);
  expect(r.code, r.stderr).toBe(0);
  return JSON.parse(r.stdout) as {
    inputsHash: string;
    requests: number;
    families: Record<string, number>;
    largestInputBytes: number;
  };
}

describe("the fuzz inputs", () => {
  it("are a function of the seed: the same seed gives the same inputs, another seed others; every class is generated", async () => {
    const [a, b, c] = await Promise.all([dryRun(7, 1000), dryRun(7, 1000), dryRun(8, 1000)]);
    expect(a.inputsHash).toMatch(/^[0-9a-f]{64}$/);
    expect(b.inputsHash).toBe(a.inputsHash);
    expect(c.inputsHash).not.toBe(a.inputsHash);
    expect(a.requests).toBe(1000);
    // JSON-RPC bodies, HTTP+JSON requests, HTTP framing, and incomplete requests only the node's timers end.
    expect(a.families.jsonrpc).toBeGreaterThan(400);
    expect(a.families.rest).toBeGreaterThan(80);
    expect(a.families.http).toBeGreaterThan(250);
    expect(a.families.incomplete).toBeGreaterThan(2);
  }, 60_000);

  it("refuses a usage error with exit 2 and says what is wrong", async () => {
    const r = await fuzz(["--requests", "many"]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("--requests must be a whole number");
  });
});

describe("a small seeded run against the binary", () => {
  // Seed 16's first 300 inputs stay under 70 KB each with --max-body 65536: no upload is cut off mid-way, so
  // the run needs no wait for the node's idle timer and the test stays quick (the premise is checked below).
  const args = ["--seed", "16", "--requests", "300", "--max-body", "65536", "--warmup", "50", "--skip-slow"];

  it("counts no crash, hang, unexpected 5xx or leak, and sends exactly the inputs its seed defines", async () => {
    requireBinary();
    const plan = await dryRun(16, 300, ["--max-body", "65536"]);
    expect(plan.largestInputBytes).toBeLessThan(256 * 1024);

    const r = await fuzz([...args, "--json", "--samples", join(dir, "samples.json")]);
    const report = JSON.parse(r.stdout);
    expect(report.counts, `${r.stderr}\nsamples: ${report.samplesFile}`).toMatchObject({
      crashes: 0,
      hangs: 0,
      unexpected5xx: 0,
      internalErrors: 0,
      dropped: 0,
      badAnswers: 0,
      scopeViolations: 0,
      identityViolations: 0,
      leaks: 0,
      liveness: 0,
      uncleanStop: 0,
    });
    expect(report.failed).toBe(false);
    expect(r.code).toBe(0);
    expect(report.inputsHash).toBe(plan.inputsHash);
    expect(report.requests).toBe(300);
    // Both listeners, both mutation classes, and answers of every kind were seen.
    for (const row of ["jsonrpc/mtls", "jsonrpc/plain", "rest/mtls", "rest/plain", "http/mtls", "http/plain"])
      expect(report.byFamily[row]?.inputs, row).toBeGreaterThan(5);
    expect(report.statuses["200"]).toBeGreaterThan(100);
    expect(report.statuses["400"]).toBeGreaterThan(5);
    expect(Object.keys(report.rpcCodes)).toEqual(
      expect.arrayContaining(["result", "-32600", "-32602", "-32700", "rest", "rest NOT_FOUND"]),
    );
    // Every task the node named is on disk and finished.
    expect(report.tasks.acknowledged).toBeGreaterThan(10);
    expect(report.tasks.missing).toBe(0);
    const terminal = ["TASK_STATE_COMPLETED", "TASK_STATE_FAILED", "TASK_STATE_CANCELED", "TASK_STATE_REJECTED"];
    expect(Object.keys(report.tasks.byState).filter((s) => !terminal.includes(s))).toEqual([]);
  }, 120_000);
});

describe("the baseline the leak checks compare against", () => {
  it("is taken with /health/ready's and /metrics's lazy worker already running: asking for them after adds no descriptor", async () => {
    requireBinary();
    const home = mkdtempSync(join(dir, "baseline-"));
    const session = new FuzzSession({
      dir: home,
      gen: { maxBody: 65536 },
      hangMs: 5000,
      tally: new Tally(1),
      progress: () => {},
    });
    try {
      await session.start();
      // No warm-up inputs: only what warmUp itself asks for.
      await session.warmUp(1, 0);
      const before = session.node.stats();
      for (const listener of ["mtls", "plain"] as const)
        for (const path of ["/health/ready", "/metrics", "/health/ready"])
          expect([200, 503]).toContain((await get(listener, session.endpoint(session.node, listener), path)).status);
      // Descriptors other than sockets (the connections just made may still be closing), once the probe's
      // worker has closed the database connection it opens for each check (it answers just before it does):
      // back to the baseline, where without the warm-up 4 stay open for good.
      const files = (st: { fds: number; sockets: number }) => st.fds - st.sockets;
      let after = files(session.node.stats());
      for (let i = 0; i < 100 && after > files(before); i++) {
        await Bun.sleep(50);
        after = files(session.node.stats());
      }
      expect(after).toBe(files(before));
    } finally {
      await session.stop(3000);
    }
  }, 60_000);
});
