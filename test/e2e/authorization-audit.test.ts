/**
 * The compiled binary with an authorization policy in HOME/config.toml and a small audit log: a refused and an
 * allowed call over each binding, refused connections beyond what the journal logs, a policy changed on
 * SIGHUP, rotation at the size limit keeping N files, and `serve --check` on a bad policy.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { existsSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { runBinary, serveBinary, type ServedBinary } from "../helpers/binary";
import { httpJsonDriver, jsonRpcDriver } from "../helpers/bindings";
import { makeFleet, type Fleet, type TlsIdentity } from "../helpers/fleet";
import { rpc, userMessage } from "../helpers/rpc";

const MAX = 2048;
const SECRET = `do-not-log-${crypto.randomUUID()}`;
const POLICY = `executor = "echo"
audit_log_max_bytes = ${MAX}
audit_log_keep = 2

[[authorize]]
peers = ["beta"]
methods = ["*"]
`;

let fleet: Fleet;
let node: ServedBinary | undefined;
let home: string;

beforeAll(async () => {
  fleet = await makeFleet(["alpha", "beta", "gamma"]);
  home = fleet.homes.alpha;
  writeFileSync(join(home, "config.toml"), POLICY);
});

afterAll(async () => {
  await node?.stop("SIGKILL");
  fleet?.cleanup();
});

async function attempt(url: string, tls: Partial<TlsIdentity>): Promise<boolean> {
  try {
    await fetch(`${url}/`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: "{}",
      tls,
    } as RequestInit);
    return true;
  } catch {
    return false;
  }
}

describe("authorization and audit in the binary", () => {
  it("serve --check names a bad policy and exits 2", async () => {
    const bad = join(fleet.root, "bad.toml");
    writeFileSync(bad, `[[authorize]]\npeers = ["beta"]\nmethods = ["tasks/get"]\n`);
    const r = await runBinary(["--home", home, "serve", "--check", "--config", bad]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(
      `config file ${bad}: authorize entry 1: method 'tasks/get' is a v0.3 name; write 'GetTask'`,
    );
    const good = await runBinary(["--home", home, "serve", "--check"]);
    expect(good.code, good.stderr).toBe(0);
    expect(good.stdout).toMatch(/^authorize = \[\{"peers":\["beta"\],"methods":\["\*"\]\}\]\s+# file$/m);
  });

  it("refuses and allows per the policy, applies a change on SIGHUP, and audits every call and refusal, rotated", async () => {
    node = await serveBinary(home, ["--log-refusals-per-minute", "1"]);
    const line = await node.waitForLine({ msg: "serving A2A over mTLS" });
    expect(line).toMatchObject({ audit: join(home, "audit.jsonl"), authorization: "1 [[authorize]] rule(s)" });
    const beta = fleet.identity("beta");
    const gamma = fleet.identity("gamma");
    const message = () => ({ message: userMessage(SECRET) });

    // Enough calls to rotate the log more than twice: the oldest files go.
    for (let i = 1; i <= 40; i++)
      expect((await rpc(node.url, beta, "GetTask", { id: `bulk-${i}` })).body.error.code).toBe(-32001);

    // The CLI shows the refusal as the node words it.
    const cli = await runBinary(["--home", fleet.homes.gamma, "send", "--agent", node.url, "--task", SECRET]);
    expect(cli.code).toBe(1);
    expect(cli.stderr).toContain(
      `answered error -32000: permission denied: peer 'gamma' may not call SendMessage on this node (no [[authorize]] rule in its config.toml allows it)`,
    );

    const sent = await jsonRpcDriver(node.url).call(beta, "SendMessage", message());
    expect(sent.ok).toBe(true);
    const refused = await httpJsonDriver(node.url).call(gamma, "SendMessage", message());
    expect(refused).toMatchObject({ ok: false, status: 403, reason: "PERMISSION_DENIED" });
    expect(refused.message).toContain("peer 'gamma' may not call SendMessage");
    const refusedRpc = await jsonRpcDriver(node.url).call(gamma, "ListTasks", {});
    expect(refusedRpc).toMatchObject({ ok: false, code: -32000, reason: "PERMISSION_DENIED" });

    // Refused connections past what the journal logs one by one (1 a minute here): the audit log has each,
    // the first of each source and kind as it came, the others summed up in one line (written on stop here).
    const foreign = await fleet.foreign("mallory");
    for (let i = 0; i < 3; i++) {
      expect(await attempt(node.url, foreign)).toBe(false);
      expect(await attempt(node.url, { ca: beta.ca })).toBe(false);
    }

    writeFileSync(
      join(home, "config.toml"),
      `${POLICY}\n[[authorize]]\npeers = ["gamma"]\nmethods = ["SendMessage", "ListTasks"]\n`,
    );
    node.signal("SIGHUP");
    await node.waitForLine({ msg: "reloaded", applied: /authorize/ });
    const allowed = await httpJsonDriver(node.url).call(gamma, "SendMessage", message());
    expect(allowed.ok, allowed.message).toBe(true);
    expect((await rpc(node.url, gamma, "ListTasks", {})).body.result.tasks.map((t: { id: string }) => t.id)).toEqual([
      allowed.result.task.id,
    ]);

    expect(await node.stop()).toBe(0);
    node = undefined;

    const path = join(home, "audit.jsonl");
    const files = [`${path}.2`, `${path}.1`, path];
    expect(existsSync(`${path}.3`)).toBe(false);
    for (const f of files) {
      expect(statSync(f).mode & 0o777).toBe(0o600);
      expect(statSync(f).size).toBeLessThanOrEqual(MAX);
      expect(statSync(f).size).toBeGreaterThan(0);
    }
    const text = files.map((f) => readFileSync(f, "utf8")).join("");
    expect(text).not.toContain(SECRET);
    const lines = text
      .split("\n")
      .filter(Boolean)
      .map((l) => JSON.parse(l));
    const bulk = lines.filter((l) => /^bulk-/.test(l.taskId ?? "")).map((l) => l.taskId);
    expect(bulk.length).toBeGreaterThan(0);
    expect(bulk).not.toContain("bulk-1"); // rotated out with the oldest file
    expect(bulk.at(-1)).toBe("bulk-40");
    expect(lines.find((l) => l.peer === "beta" && l.method === "SendMessage")).toMatchObject({
      outcome: "ok",
      binding: "jsonrpc",
      taskId: sent.result.task.id,
    });
    expect(lines.filter((l) => l.peer === "gamma").map((l) => [l.binding, l.method, l.outcome, l.code])).toEqual([
      ["jsonrpc", "SendMessage", "denied", -32000],
      ["http-json", "SendMessage", "denied", -32000],
      ["jsonrpc", "ListTasks", "denied", -32000],
      ["http-json", "SendMessage", "ok", undefined],
      ["jsonrpc", "ListTasks", "ok", undefined],
    ]);
    const refusals = lines.filter((l) => l.event === "refused");
    for (const kind of ["foreign_ca", "no_certificate"]) {
      const [first, rest, ...more] = refusals.filter((l) => l.kind === kind);
      expect(more, kind).toEqual([]);
      expect(first, kind).toMatchObject({ remote: expect.stringMatching(/127\.0\.0\.1/), reason: expect.any(String) });
      expect(first.more, kind).toBeUndefined();
      expect(rest, kind).toMatchObject({
        remote: first.remote,
        reason: first.reason,
        more: 2,
        since: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
      });
      expect(Math.abs(Date.parse(rest.since) - Date.parse(first.time))).toBeLessThan(1000);
    }
  });
});
