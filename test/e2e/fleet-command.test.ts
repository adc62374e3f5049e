/**
 * `a2a-node fleet` through the compiled binary, in a fleet of real nodes made with our own PKI: alpha (the CA)
 * and beta serve; gamma serves but alpha revoked it; delta is registered where nothing listens; hush is a
 * socket that takes the connection and never says a word. One run of the command must show all five rows
 * (alpha's own first), each down node with the reason the client gives for it, and finish within its bound
 * although hush never answers. The nodes start from the binary: two minutes for a busy two-core machine.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer, type Server, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { requireBinary, runBinary, serveBinary, type ServedBinary } from "../helpers/binary";
import type { FleetRow } from "../../src/cli/fleet-survey";

let root: string;
const served: ServedBinary[] = [];
let hush: Server;
const hushed: Socket[] = [];
let hushPort = 0;
let deltaPort = 0;

const home = (name: string) => join(root, name);
const cli = (name: string, ...args: string[]) => runBinary(["--home", home(name), ...args]);
const FAST = ["--timeout", "4", "--peer-connect-timeout", "1", "--peer-handshake-timeout", "1"];

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), "a2a-fleet-command-"));
  expect((await cli("alpha", "init-pki", "--name", "alpha")).code).toBe(0);
  for (const name of ["beta", "gamma", "delta"]) {
    const bundle = join(root, `${name}.bundle`);
    expect((await cli("alpha", "pki", "issue", name, "--out", bundle)).code).toBe(0);
    expect((await cli(name, "init-pki", "--bundle", bundle)).code).toBe(0);
  }
  const [alpha, beta, gamma] = await Promise.all(["alpha", "beta", "gamma"].map((n) => serveBinary(home(n))));
  served.push(alpha, beta, gamma);
  hush = createServer((s) => void hushed.push(s));
  await new Promise<void>((r) => hush.listen(0, "127.0.0.1", r));
  hushPort = (hush.address() as { port: number }).port;
  deltaPort = await closedPort();
  expect((await cli("alpha", "peers", "add", "beta", beta.url, "--pin")).code).toBe(0);
  expect((await cli("alpha", "peers", "add", "gamma", gamma.url, "--pin")).code).toBe(0);
  expect((await cli("alpha", "peers", "add", "delta", `https://127.0.0.1:${deltaPort}`)).code).toBe(0);
  expect((await cli("alpha", "peers", "add", "hush", `https://127.0.0.1:${hushPort}`)).code).toBe(0);
  expect((await cli("alpha", "pki", "revoke", "gamma", "--reason", "laptop stolen")).code).toBe(0);
}, 120_000);

afterAll(async () => {
  for (const n of served) await n.stop("SIGKILL").catch(() => {});
  for (const s of hushed) s.destroy();
  hush?.close();
  rmSync(root, { recursive: true, force: true });
});

describe("a2a-node fleet", () => {
  it("shows this node and every peer, each down one with the client's reason, in one bounded run", async () => {
    const run = await cli("alpha", "fleet", "--json", ...FAST);
    expect(run.code, run.stderr).toBe(1); // not every node answered
    const rows = JSON.parse(run.stdout) as FleetRow[];
    const by = Object.fromEntries(rows.map((r) => [r.name, r]));
    expect(rows.map((r) => r.name)).toEqual(["alpha", "beta", "delta", "gamma", "hush"]);

    expect(by.alpha).toMatchObject({ role: "self", state: "up", version: "0.1.0", executor: "openai" });
    expect(by.alpha.certificate!.daysLeft).toBeGreaterThan(0);
    expect(by.alpha.revokedAt).toBeUndefined();
    expect(by.alpha.load).toEqual({ running: 0, queued: 0, inputRequired: 0 });

    expect(by.beta).toMatchObject({
      role: "peer",
      state: "up",
      version: "0.1.0",
      executor: "openai",
      pin: "key pin matches",
      card: { name: expect.any(String) },
    });
    expect(by.beta.ms).toBeGreaterThan(0);
    expect(by.beta.certificate).toMatchObject({
      keyPin: expect.stringMatching(/^spki:sha256:/),
      serial: expect.stringMatching(/^[0-9A-F]+$/),
    });
    expect(by.beta.load).toEqual({ running: 0, queued: 0, inputRequired: 0 });
    expect(by.beta.revokedAt).toBeUndefined();

    expect(by.gamma).toMatchObject({ state: "refused", pin: "key pin matches", revokedAt: expect.any(String) });
    expect(by.gamma.why).toMatch(/revoked/);

    expect(by.delta).toMatchObject({ state: "down" });
    expect(by.delta.why).toBe(
      `cannot reach peer 'delta' at https://127.0.0.1:${deltaPort}: connection refused (nothing listens on 127.0.0.1:${deltaPort})`,
    );

    expect(by.hush.state).toBe("timeout");
    expect(by.hush.why).toMatch(/handshake/);
  }, 60_000);

  it("draws a table, with the reasons under it", async () => {
    const run = await cli("alpha", "fleet", ...FAST);
    expect(run.code, run.stderr).toBe(1);
    const lines = run.stdout.split("\n");
    expect(lines[0]).toMatch(/^NODE\s+STATE\s+RTT\s+VERSION\s+EXECUTOR\s+CERT\s+PIN\s+REVOKED\s+LOAD\s+CARD$/);
    expect(lines.find((l) => l.startsWith("alpha *"))).toMatch(
      /^alpha \*\s+up\s+[\d.]+\s+0\.1\.0\s+openai\s+\d+d\s+-\s+no\s+0\/0\/0\s+/,
    );
    expect(lines.find((l) => l.startsWith("beta "))).toMatch(/\sup\s.*key pin matches\s+no\s+0\/0\/0\s/);
    expect(lines.find((l) => l.startsWith("gamma "))).toMatch(/\srefused\s.*\srevoked\s/);
    expect(run.stdout).toContain(
      `  delta: cannot reach peer 'delta' at https://127.0.0.1:${deltaPort}: connection refused`,
    );
  }, 60_000);

  it("--watch writes one round after another when piped, until Ctrl-C", async () => {
    const proc = Bun.spawn(
      [requireBinary(), "--home", home("alpha"), "fleet", "--watch", "--interval", "0.2", "--json", ...FAST],
      {
        env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "/tmp" },
        stdin: "ignore",
        stdout: "pipe",
        stderr: "pipe",
      },
    );
    const reader = proc.stdout.getReader();
    let text = "";
    while (text.split("\n").length < 3) {
      const { value, done } = await reader.read();
      if (done) break;
      text += new TextDecoder().decode(value);
    }
    proc.kill("SIGINT");
    expect(await proc.exited).toBe(130);
    const rounds = text
      .split("\n")
      .filter(Boolean)
      .slice(0, 2)
      .map((l) => JSON.parse(l) as FleetRow[]);
    expect(rounds.map((r) => r.find((row) => row.name === "beta")?.state)).toEqual(["up", "up"]);
  }, 60_000);

  it("says when the home's node is not running, and refuses bad flags", async () => {
    const run = await cli("delta", "fleet", "--json", ...FAST);
    const rows = JSON.parse(run.stdout) as FleetRow[];
    expect(rows).toEqual([
      expect.objectContaining({
        name: "delta",
        role: "self",
        state: "not running",
        why: expect.stringContaining("no 'a2a-node serve' runs"),
      }),
    ]);
    expect(run.code).toBe(1);
    const bad = await cli("alpha", "fleet", "--interval", "1");
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain("--interval goes with --watch");
  }, 60_000);
});

function closedPort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer();
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}
