/**
 * What one deeply nested request costs the node (`npm run bench:deep-json`): the compiled binary (echo
 * executor) on a fresh home, sent SendMessage requests of about 90 KB whose metadata is nested ~45,000
 * levels (under the 1 MiB body limit), one at a time over mTLS. Reports the node's CPU (user + system, all
 * threads, from /proc) per request and what each was answered; then a well-formed request checks the node
 * still serves.
 *   bun scripts/bench-deep-json.ts [--requests N]
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { CLK_TCK, cpuTicks, killAllNow, stop } from "./bench/proc";
import { clientTls, readBundle, RPC_HEADERS, sendMessageBody } from "./bench/rpc";
import { makePki, startServer, waitUntilAnswering } from "./bench/servers";

const { values: flags } = parseArgs({ options: { requests: { type: "string", default: "10" } } });
const requests = Number(flags.requests);
const LEVELS = 45_000;

const dir = mkdtempSync(join(tmpdir(), "a2a-bench-deep-"));
process.on("exit", () => {
  killAllNow();
  rmSync(dir, { recursive: true, force: true });
});

/** A SendMessage whose metadata is {"a":[[[ ... ]]]} nested `levels` deep. */
function deepBody(levels: number, n: number): string {
  const message = { messageId: `deep-${n}-${crypto.randomUUID()}`, role: "ROLE_USER", parts: [{ text: "deep" }] };
  const params =
    JSON.stringify({ message }).slice(0, -1) + `,"metadata":{"a":${"[".repeat(levels)}${"]".repeat(levels)}}}`;
  return `{"jsonrpc":"2.0","id":${n},"method":"SendMessage","params":${params}}`;
}

const pki = makePki(dir);
const tls = clientTls(readBundle(pki.bundles.client));
const server = await startServer("a2a-node", pki, dir);
try {
  await waitUntilAnswering(server, tls);
  const answers = new Map<string, number>();
  const sizes: number[] = [];
  const t0 = cpuTicks(server.proc.pid);
  const w0 = performance.now();
  for (let i = 0; i < requests; i++) {
    const body = deepBody(LEVELS, i);
    sizes.push(body.length);
    const res = await fetch(server.url, { method: "POST", headers: RPC_HEADERS, body, tls } as RequestInit);
    const reply = (await res.json()) as {
      error?: { code: number; message: string };
      result?: { task?: { status: { state: string } } };
    };
    const what = reply.error
      ? `error ${reply.error.code}: ${reply.error.message}`
      : `result ${reply.result?.task?.status.state}`;
    answers.set(what, (answers.get(what) ?? 0) + 1);
  }
  const ms = performance.now() - w0;
  const cpuMs = ((cpuTicks(server.proc.pid) - t0) * 1000) / CLK_TCK;
  const { body, text } = sendMessageBody(`after-deep-${crypto.randomUUID()}`, 0);
  const after = await fetch(server.url, { method: "POST", headers: RPC_HEADERS, body, tls } as RequestInit);
  const still = (await after.text()).includes(text);
  console.log(
    `${requests} requests of ${(sizes[0] / 1024).toFixed(0)} KB, metadata nested ${LEVELS} levels, one at a time`,
  );
  console.log(
    `node CPU   ${(cpuMs / requests).toFixed(1)} ms per request (${cpuMs.toFixed(0)} ms in all; /proc ticks are 10 ms)`,
  );
  console.log(`wall time  ${(ms / requests).toFixed(1)} ms per request`);
  for (const [what, n] of answers) console.log(`answered   ${n}× ${what}`);
  console.log(
    `afterwards the node ${still ? "still answers a normal SendMessage" : "DID NOT answer a normal SendMessage"}`,
  );
} finally {
  await stop(server.proc);
}
process.exit(0);
