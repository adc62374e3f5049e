/**
 * Token streaming benchmark (`npm run bench:tokens`): a fake model emitting tokens at a fixed pace, measured
 * side by side in one run, straight from the model ("direct") and through an a2a-node (SendStreamingMessage
 * over mTLS to a node whose openai executor streams from that model), all on loopback.
 *   1. added latency per token (p50/p99) and first-token delay, at 2 ms per token, 500 tokens;
 *   2. tokens/s through the node when the model is as fast as it can be (20,000 tokens);
 *   3. 100 concurrent streaming tasks (300 tokens each, 5 ms apart): node peak RSS, tokens lost or reordered.
 * Targets (issue 4): added p99 <= 2 ms per token; first token <= 5 ms later than direct; >= 5,000 tokens/s;
 * 100 streams with peak RSS <= 150 MB and no token lost or reordered.
 *   bun scripts/bench-tokens.ts [--json FILE]
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort, killAllNow, peakRssBytes, stop, track } from "./bench/proc";
import type { One } from "./bench/token-client";

const ROOT = join(import.meta.dir, "..");
const BINARY = join(ROOT, "dist", "a2a-node");
const dir = mkdtempSync(join(tmpdir(), "a2a-bench-tokens-"));
process.on("exit", () => {
  killAllNow();
  rmSync(dir, { recursive: true, force: true });
});
const run = (args: string[]) => {
  const r = Bun.spawnSync([BINARY, ...args], { stdout: "pipe", stderr: "pipe" });
  if (r.exitCode !== 0) throw new Error(`a2a-node ${args.join(" ")}: ${r.stderr}`);
};
const pct = (xs: number[], p: number) =>
  [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))];

async function waitFor(p: Bun.Subprocess, pipe: "stdout" | "stderr", marker: RegExp): Promise<string> {
  const reader = (p[pipe] as ReadableStream<Uint8Array>).getReader();
  let text = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) throw new Error(`process exited before ${marker}: ${text}`);
    text += new TextDecoder().decode(value);
    const m = marker.exec(text);
    if (m) {
      // Keep reading (and dropping) the rest, so a full pipe never stalls the process's writes.
      void (async () => {
        while (!(await reader.read()).done);
      })();
      return m[1] ?? m[0];
    }
  }
}

async function client(cfg: Record<string, unknown>): Promise<One[]> {
  const p = track(
    Bun.spawn([process.execPath, join(import.meta.dir, "bench", "token-client.ts"), JSON.stringify(cfg)], {
      stdout: "pipe",
      stderr: "inherit",
    }),
  );
  const out = await new Response(p.stdout).text();
  if ((await p.exited) !== 0) throw new Error("token client failed");
  return JSON.parse(out);
}

const modelPort = await freePort();
const model = track(
  Bun.spawn([process.execPath, join(import.meta.dir, "bench", "token-model.ts"), String(modelPort)], {
    stdout: "pipe",
    stderr: "inherit",
  }),
);
await waitFor(model, "stdout", /listening/);
const modelUrl = `http://127.0.0.1:${modelPort}/v1`;

const home = join(dir, "beta");
run(["--home", home, "init-pki", "--name", "beta"]);
const bundle = join(dir, "alpha.json");
run(["--home", home, "pki", "issue", "alpha", "--out", bundle]);
const node = track(
  Bun.spawn(
    [
      BINARY,
      "--home",
      home,
      "serve",
      "--executor",
      "openai",
      "--model-url",
      modelUrl,
      "--host",
      "127.0.0.1",
      "--port",
      "0",
      "--max-concurrent",
      "128",
    ],
    {
      stdout: "pipe", // its log: JSON lines, one when the node listens
      stderr: "inherit",
    },
  ),
);
const nodeUrl = `${await waitFor(node, "stdout", /"listen":"(https:\/\/[^"]+)"/)}/`;

// Warm-up both paths.
await client({ mode: "direct", url: modelUrl, text: "tokens=200 pace=0" });
await client({ mode: "node", url: nodeUrl, bundle, text: "tokens=200 pace=0" });

const paced = "tokens=500 pace=2";
const [direct] = await client({ mode: "direct", url: modelUrl, text: paced });
const [through] = await client({ mode: "node", url: nodeUrl, bundle, text: paced });
const [fast] = await client({ mode: "node", url: nodeUrl, bundle, text: "tokens=20000 pace=0" });
const many = await client({ mode: "node", url: nodeUrl, bundle, text: "tokens=300 pace=5", streams: 100 });
const rss = peakRssBytes(node.pid);
await stop(node);
await stop(model);

const complete = many.filter((m) => m.tokens === 300 && m.inOrder).length;
const results = {
  direct: {
    p50Ms: pct(direct.latencies, 50),
    p99Ms: pct(direct.latencies, 99),
    firstTokenMs: direct.firstTokenMs,
    tokens: direct.tokens,
  },
  through: {
    p50Ms: pct(through.latencies, 50),
    p99Ms: pct(through.latencies, 99),
    firstTokenMs: through.firstTokenMs,
    tokens: through.tokens,
    inOrder: through.inOrder,
  },
  addedP99Ms: pct(through.latencies, 99) - pct(direct.latencies, 99),
  addedFirstTokenMs: through.firstTokenMs - direct.firstTokenMs,
  tokensPerSecond: Math.round((fast.tokens / fast.ms) * 1000),
  fastTokens: fast.tokens,
  concurrent: { streams: many.length, complete, peakRssMb: Math.round((rss / 1024 / 1024) * 10) / 10 },
};
const v = (ok: boolean) => (ok ? "PASS" : "FAIL");
console.log(
  `per-token latency   direct p50 ${results.direct.p50Ms.toFixed(3)} p99 ${results.direct.p99Ms.toFixed(3)} ms | through a2a-node p50 ${results.through.p50Ms.toFixed(3)} p99 ${results.through.p99Ms.toFixed(3)} ms`,
);
console.log(
  `first token         direct ${direct.firstTokenMs.toFixed(2)} ms | through ${through.firstTokenMs.toFixed(2)} ms`,
);
console.log(
  `one stream          ${fast.tokens} tokens in ${fast.ms.toFixed(0)} ms = ${results.tokensPerSecond} tokens/s (in order: ${fast.inOrder})`,
);
console.log(
  `100 streams         ${complete}/100 complete and in order; node peak RSS ${results.concurrent.peakRssMb} MB`,
);
console.log("\ntargets");
console.log(
  `${v(results.addedP99Ms <= 2)}  added latency per token p99 <= 2 ms      ${results.addedP99Ms.toFixed(3)} ms`,
);
console.log(
  `${v(results.addedFirstTokenMs <= 5)}  first token <= 5 ms later than direct   ${results.addedFirstTokenMs.toFixed(2)} ms`,
);
console.log(
  `${v(results.tokensPerSecond >= 5000 && fast.inOrder)}  one stream >= 5,000 tokens/s            ${results.tokensPerSecond}`,
);
console.log(
  `${v(complete === 100 && rss <= 150 * 1024 * 1024)}  100 streams, RSS <= 150 MB, none lost     ${complete}/100, ${results.concurrent.peakRssMb} MB`,
);
const at = process.argv.indexOf("--json");
if (at !== -1) writeFileSync(process.argv[at + 1], JSON.stringify(results, null, 2));
process.exit(0);
