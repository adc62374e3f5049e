/**
 * How long after `pki revoke` a revoked certificate is refused (`npm run bench:revocation`): on the CA node
 * itself, and on a node that fetches the list from it (ca_peer), both the compiled binary with default settings
 * unless told otherwise. The probe connects as the revoked member every --probe-ms (a new TLS connection each
 * time, so each is judged at its handshake) and stops at the first refusal (HTTP 403, or a closed connection).
 * Measured from the moment `pki revoke` is started; its own run time is printed too.
 *   bun scripts/revocation-latency.ts [--crl-refresh SECONDS] [--probe-ms 20] [--json]
 *     --crl-refresh  the nodes' crl_refresh_seconds (default: the setting's default, 300)
 *     --probe-ms     pause between probes (default 20)
 *     --json         one JSON line instead of text
 * Exit codes: 0 measured, 1 a node did not start or a refusal never came, 2 usage.
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const USAGE = "usage: bun scripts/revocation-latency.ts [--crl-refresh SECONDS] [--probe-ms MS] [--json]";
const args = process.argv.slice(2);
if (args.includes("--help") || args.includes("-h")) {
  console.log(USAGE);
  process.exit(0);
}
const known = new Set(["--crl-refresh", "--probe-ms", "--json"]);
for (let i = 0; i < args.length; i++) {
  if (!known.has(args[i]!)) {
    console.error(`unknown option ${args[i]}\n${USAGE}`);
    process.exit(2);
  }
  if (args[i] !== "--json") i++;
}
const opt = (name: string): number | undefined => {
  const i = args.indexOf(`--${name}`);
  if (i === -1) return undefined;
  const n = Number(args[i + 1]);
  if (!Number.isFinite(n) || n <= 0) {
    console.error(`--${name} needs a positive number\n${USAGE}`);
    process.exit(2);
  }
  return n;
};
const REFRESH = opt("crl-refresh");
const PROBE_MS = opt("probe-ms") ?? 20;
const JSON_OUT = args.includes("--json");

const BINARY = join(import.meta.dir, "..", "dist", "a2a-node");
const dir = mkdtempSync(join(tmpdir(), "a2a-revocation-latency-"));
const children: ReturnType<typeof Bun.spawn>[] = [];
const cleanup = () => {
  for (const c of children) c.kill("SIGKILL");
  rmSync(dir, { recursive: true, force: true });
};
process.on("exit", cleanup);
process.on("SIGINT", () => process.exit(130));

const home = (n: string) => join(dir, n);
function cli(...a: string[]): string {
  const r = Bun.spawnSync([BINARY, ...a], { stdout: "pipe", stderr: "pipe" });
  if (r.exitCode !== 0) throw new Error(`a2a-node ${a.join(" ")}: ${r.stderr}`);
  return r.stdout.toString();
}

/** Starts serve on a home and resolves with its URL once it logs that it listens. */
async function serve(name: string, extra: string[]): Promise<string> {
  const p = Bun.spawn(
    [BINARY, "--home", home(name), "serve", "--host", "127.0.0.1", "--port", "0", "--executor", "echo", ...extra],
    { stdout: "pipe", stderr: "inherit" },
  );
  children.push(p);
  const reader = (p.stdout as ReadableStream<Uint8Array>).getReader();
  let text = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) throw new Error(`serve ${name} ended before it listened:\n${text}`);
    text += new TextDecoder().decode(value);
    const line = text.split("\n").find((l) => l.includes('"serving A2A over mTLS"'));
    if (line) {
      // Keep reading (and dropping) its log so the pipe never fills.
      void (async () => {
        while (!(await reader.read()).done);
      })();
      return JSON.parse(line).listen as string;
    }
  }
}

const tls = (name: string) => ({
  cert: readFileSync(join(home(name), "certs", "node.crt"), "utf8"),
  key: readFileSync(join(home(name), "secrets", "node.key"), "utf8"),
  ca: readFileSync(join(home(name), "certs", "ca.crt"), "utf8"),
});

/** Whether `who` is refused by the node at `url` on a new connection. */
async function refused(who: ReturnType<typeof tls>, url: string): Promise<boolean> {
  try {
    const res = await fetch(`${url}/health`, { keepalive: false, tls: who } as RequestInit);
    await res.arrayBuffer();
    return res.status === 403;
  } catch {
    return true;
  }
}

async function firstRefusal(who: ReturnType<typeof tls>, url: string, since: number, limitMs: number): Promise<number> {
  while (performance.now() - since < limitMs) {
    if (await refused(who, url)) return performance.now() - since;
    await Bun.sleep(PROBE_MS);
  }
  throw new Error(`${url} still took the revoked certificate ${Math.round(limitMs / 1000)} s after pki revoke`);
}

cli("--home", home("alpha"), "init-pki", "--name", "alpha");
for (const n of ["beta", "gamma"]) {
  cli("--home", home("alpha"), "pki", "issue", n, "--out", join(dir, `${n}.bundle`));
  cli("--home", home(n), "init-pki", "--bundle", join(dir, `${n}.bundle`));
}
const refresh = REFRESH === undefined ? [] : ["--crl-refresh", String(REFRESH)];
const alpha = await serve("alpha", refresh);
cli("--home", home("beta"), "peers", "add", "alpha", alpha);
const beta = await serve("beta", ["--ca-peer", "alpha", ...refresh]);
const gamma = tls("gamma");
for (const url of [alpha, beta])
  if (await refused(gamma, url)) throw new Error(`${url} refuses gamma before it is revoked`);

const t0 = performance.now();
cli("--home", home("alpha"), "pki", "revoke", "gamma");
const revokeMs = performance.now() - t0;
const limitMs = ((REFRESH ?? 300) * 2 + 30) * 1000;
const [caMs, peerMs] = await Promise.all([
  firstRefusal(gamma, alpha, t0, limitMs),
  firstRefusal(gamma, beta, t0, limitMs),
]);
// The probes start once pki revoke has returned (it runs synchronously above): the first one is its result.
const result = {
  crlRefreshSeconds: REFRESH ?? 300,
  pkiRevokeMs: Math.round(revokeMs),
  caNodeMs: Math.round(caMs),
  caNodeAfterReturnMs: Math.round(caMs - revokeMs),
  caPeerNodeMs: Math.round(peerMs),
};
if (JSON_OUT) console.log(JSON.stringify(result));
else
  console.log(
    [
      `crl_refresh_seconds ${result.crlRefreshSeconds}; pki revoke ran ${result.pkiRevokeMs} ms`,
      `refused by the CA node        ${result.caNodeMs} ms after pki revoke started (${result.caNodeAfterReturnMs} ms after it returned)`,
      `refused by the ca_peer node   ${(result.caPeerNodeMs / 1000).toFixed(1)} s after pki revoke started`,
    ].join("\n"),
  );
process.exit(0);
