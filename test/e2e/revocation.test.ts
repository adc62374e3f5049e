/**
 * Revocation through the compiled binary, with certificates from our own PKI: `pki revoke` on the CA machine
 * holds at once on the CA node (the next connection, and the open ones and their streams), within one refresh
 * on a node with ca_peer; a revoked node knows it (log, /health/ready, doctor, the words a refused client
 * reads); a stale list is said (a warning every failed refresh, the readiness check, the age metric) while
 * connections are still taken (fail open); a revoked bearer token's open streams end; renewal supersedes the
 * certificate it replaces once the new one is in use. Times from `pki revoke` to refusal are measured by
 * scripts/revocation-latency.ts, not asserted here. Each test starts several nodes from the binary: they get
 * two minutes, for a machine busy with other work (they take 10-20 s on a loaded two-core machine).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readFileSync, watch, writeFileSync } from "node:fs";
import { dirname } from "node:path";
import { readRevocationList, type RevocationList } from "../../pki";
import { join } from "node:path";
import { homePaths } from "../../src/home";
import { runBinary, serveBinary, type ServedBinary } from "../helpers/binary";
import { startGatedModel, type GatedModel } from "../fakes/gated-model";
import { openSse, openSseRequest } from "../helpers/sse";
import { userMessage } from "../helpers/rpc";
import { tempDir } from "../helpers/temp-dir";

let root: string;
let model: GatedModel;
const served: ServedBinary[] = [];

beforeAll(() => {
  root = tempDir("a2a-revocation-");
  model = startGatedModel();
});
afterAll(async () => {
  for (const n of served) await n.stop("SIGKILL").catch(() => {});
  model.stop();
});

const home = (name: string) => join(root, name);
const cli = (name: string, ...args: string[]) => runBinary(["--home", home(name), ...args]);
const tlsOf = (name: string) => {
  const p = homePaths(home(name));
  return {
    cert: readFileSync(p.nodeCert, "utf8"),
    key: readFileSync(p.nodeKey, "utf8"),
    ca: readFileSync(p.caCert, "utf8"),
  };
};
const MODEL = () => ["--executor", "openai", "--model-url", model.url, "--model", "m"];

async function serve(name: string, ...args: string[]): Promise<ServedBinary> {
  const node = await serveBinary(home(name), ["--log-refusals-per-minute", "1000", ...args]);
  served.push(node);
  return node;
}

/** A fleet: `ca` runs init-pki, the others get bundles from it. */
async function fleet(ca: string, ...members: string[]): Promise<void> {
  expect((await cli(ca, "init-pki", "--name", ca)).code).toBe(0);
  for (const name of members) {
    const bundle = join(root, `${name}.bundle`);
    expect((await cli(ca, "pki", "issue", name, "--out", bundle)).code).toBe(0);
    expect((await cli(name, "init-pki", "--bundle", bundle)).code).toBe(0);
  }
}

/** A call as `tls` on a connection of its own: the HTTP status and body, or the error code of a refused connection. */
async function callAs(tls: ReturnType<typeof tlsOf>, url: string): Promise<{ status: number | string; body?: any }> {
  try {
    const res = await fetch(url, {
      method: "POST",
      headers: { "content-type": "application/json", "a2a-version": "1.0" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "ListTasks", params: {} }),
      keepalive: false,
      tls,
    } as RequestInit);
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : undefined };
  } catch (err) {
    return { status: (err as { code?: string }).code ?? "error" };
  }
}

/** Resolves with the list at `path` once one whose number `want` accepts is there (watching its folder: an event). */
function untilList(path: string, caPem: string, want: (n: number) => boolean): Promise<RevocationList> {
  return new Promise((resolve) => {
    const check = () => {
      try {
        const list = readRevocationList(readFileSync(path, "utf8"), caPem);
        if (!want(list.number)) return false;
        watcher.close();
        resolve(list);
        return true;
      } catch {
        return false; // not there yet, or caught half-renamed
      }
    };
    const watcher = watch(dirname(path), () => void check());
    check();
  });
}

const adminUrl = async (node: ServedBinary) => (await node.waitForLine({ msg: /^admin port open/ })).url as string;

describe("pki revoke holds at once on the CA node, within one refresh on a node with ca_peer", () => {
  it("the next connection is refused in words, the open stream ends before its task does, and the revoked node knows it", async () => {
    await fleet("alpha", "beta", "gamma", "delta");
    // alpha re-reads its list only hourly by itself: what it does at once is revocation's own doing.
    const alpha = await serve("alpha", ...MODEL(), "--crl-refresh", "3600");
    for (const name of ["beta", "gamma"]) expect((await cli(name, "peers", "add", "alpha", alpha.url)).code).toBe(0);
    const beta = await serve("beta", "--executor", "echo", "--ca-peer", "alpha", "--crl-refresh", "1");
    const gamma = await serve(
      "gamma",
      "--executor",
      "echo",
      "--ca-peer",
      "alpha",
      "--crl-refresh",
      "1",
      "--admin-port",
      "0",
    );
    const gammaAdmin = await adminUrl(gamma);
    expect((await callAs(tlsOf("gamma"), alpha.url)).status).toBe(200);
    expect((await callAs(tlsOf("gamma"), beta.url)).status).toBe(200);
    expect((await fetch(`${gammaAdmin}/health/ready`)).status).toBe(200);

    // gamma follows a task on alpha that is still running (the model holds it).
    const text = `[hold] ${crypto.randomUUID()}`;
    const stream = await openSse(alpha.url, tlsOf("gamma"), "SendStreamingMessage", { message: userMessage(text) });
    expect(stream.status).toBe(200);
    expect((await stream.next())?.data.result.task).toBeDefined();
    await model.arrival(text);

    const revoked = await cli("alpha", "pki", "revoke", "gamma", "--reason", "laptop stolen");
    expect(revoked.code, revoked.stderr).toBe(0);
    const serial = /serial ([0-9A-F]+)/.exec(revoked.stdout)![1];

    // At once: the very next connection, without waiting for anything.
    const refused = await callAs(tlsOf("gamma"), alpha.url);
    expect(refused.status).toBe(403);
    expect(revoked.stdout).toContain(
      `told the running serve (PID ${alpha.pid}) with SIGHUP: it closes the revoked certificates' open connections`,
    );
    expect(refused.body.error.status).toBe("PERMISSION_DENIED");
    expect(refused.body.error.message).toMatch(
      new RegExp(
        `^alpha refuses this connection: the client certificate \\(serial ${serial}\\) was revoked by the fleet CA on \\S+; get a new identity from the fleet CA: on the CA machine 'a2a-node pki issue gamma --replace`,
      ),
    );
    expect((await callAs(tlsOf("delta"), alpha.url)).status).toBe(200);
    // The open stream is closed, its task not ended: nothing more came on it.
    const rest = await stream.settle();
    expect(rest.events.some((e) => e.data.result?.statusUpdate?.status?.state === "TASK_STATE_COMPLETED")).toBe(false);
    expect(
      await alpha.waitForLine({
        msg: "refused a connection",
        kind: "revoked",
        reason: new RegExp(`^closed an open connection: its certificate \\(serial ${serial}\\) was revoked`),
      }),
    ).toBeTruthy();
    model.release(text);

    // beta fetches alpha's list every second (crl_refresh_seconds = 1): refused there within one refresh.
    await beta.waitForLine({ msg: "revocation list in force", source: "peer 'alpha'", revoked: 1 });
    expect((await callAs(tlsOf("gamma"), beta.url)).status).toBe(403);
    expect((await callAs(tlsOf("delta"), beta.url)).status).toBe(200);

    // gamma, refused everywhere, still gets the list (alpha answers a revoked certificate's GET /pki/crl) and knows.
    const own = await gamma.waitForLine({ msg: "this node's own certificate is revoked; peers refuse it" });
    expect(own).toMatchObject({
      level: "error",
      name: "gamma",
      serial,
      next: expect.stringContaining("pki issue gamma --replace"),
    });
    const ready = await fetch(`${gammaAdmin}/health/ready`);
    const health = (await ready.json()) as any;
    expect(ready.status).toBe(503);
    expect(health.failed).toContain("certificate");
    expect(health.checks.certificate.detail).toMatch(
      new RegExp(`^the certificate of gamma \\(serial ${serial}\\) was revoked by the fleet CA on `),
    );
    const doctor = await cli("gamma", "doctor", "--json");
    const finding = (
      JSON.parse(doctor.stdout).checks as { check: string; status: string; detail: string; fix?: string }[]
    ).find((f) => f.check === "revocation");
    expect(finding).toMatchObject({
      status: "fail",
      detail: expect.stringContaining(`its certificate (serial ${serial}) was revoked by the fleet CA on `),
      fix: expect.stringContaining("pki issue gamma --replace"),
    });
    expect(doctor.code).not.toBe(0);
    // What gamma's send prints: alpha's words, not a reset connection.
    const sent = await cli("gamma", "send", "--agent", "alpha", "--task", "hello", "--wait");
    expect(sent.code).not.toBe(0);
    expect(sent.stderr).toContain(`the client certificate (serial ${serial}) was revoked by the fleet CA on `);
  }, 120_000);
});

describe("a list that goes stale is said, and connections are still taken (fail open)", () => {
  it("the CA node signs a new list every refresh; with it down, a node warns at every refresh, then /health/ready fails the revocation check", async () => {
    await fleet("ca2", "member2", "victim2", "caller2");
    // The CA home's crl_refresh_seconds: lists signed there (by pki revoke and by serve) are valid 4 × 2 s.
    writeFileSync(join(home("ca2"), "config.toml"), "crl_refresh_seconds = 2\n");
    const ca = await serve("ca2", "--executor", "echo");
    expect((await cli("member2", "peers", "add", "ca2", ca.url)).code).toBe(0);
    const revoked = await cli("ca2", "pki", "revoke", "victim2", "--json");
    expect(revoked.code, revoked.stderr).toBe(0);
    const first = JSON.parse(revoked.stdout).crl;
    expect(Date.parse(first.nextUpdate) - Date.now()).toBeLessThanOrEqual(8000);
    // The running CA node signs the next list once this one is a refresh period old (an event on its file).
    const caPem = readFileSync(homePaths(home("ca2")).caCert, "utf8");
    const resigned = await untilList(homePaths(home("ca2")).crl, caPem, (n) => n > first.number);
    expect(resigned.revoked.size).toBe(1);
    expect(resigned.nextUpdate!.getTime() - resigned.thisUpdate.getTime()).toBe(8000);

    const member = await serve(
      "member2",
      "--executor",
      "echo",
      "--ca-peer",
      "ca2",
      "--crl-refresh",
      "1",
      "--admin-port",
      "0",
    );
    const admin = await adminUrl(member);
    await member.waitForLine({ msg: "revocation list in force", source: "peer 'ca2'", revoked: 1 });
    const fresh = (await (await fetch(`${admin}/health/ready`)).json()) as any;
    expect(fresh.checks.revocation).toMatchObject({ source: "ca_peer 'ca2'", number: expect.any(Number), revoked: 1 });
    const metrics = await (await fetch(`${admin}/metrics`)).text();
    expect(metrics).toMatch(/^a2a_node_crl_age_seconds \d+$/m);
    expect(metrics).toMatch(/^a2a_node_crl_next_update_timestamp_seconds \d+$/m);

    expect(await ca.stop()).toBe(0);
    // Every refresh that fails says so, and says how old the list in force is.
    const stale = await member.waitForLine({
      msg: "could not fetch the revocation list; the one in force stays",
      stale: true,
    });
    expect(stale).toMatchObject({
      level: "warn",
      ca_peer: "ca2",
      list: expect.any(Number),
      list_age_s: expect.any(Number),
      next_update: expect.any(String),
    });
    const warnings = member
      .lines()
      .filter((l) => l.msg === "could not fetch the revocation list; the one in force stays");
    expect(warnings.length).toBeGreaterThanOrEqual(2);
    const res = await fetch(`${admin}/health/ready`);
    const body = (await res.json()) as any;
    expect(Date.parse(body.checks.revocation.nextUpdate) - Date.parse(body.checks.revocation.signed)).toBe(8000);
    expect(res.status).toBe(503);
    expect(body.failed).toEqual(["revocation"]);
    expect(body.checks.revocation.detail).toMatch(
      /^revocation list number \d+ \(1 revoked\), signed \d+ s ago: stale since .* \(its next update\), ca_peer 'ca2' has given no newer one since .*; revocations made since are not known here, and connections are still taken \(fail open\)$/,
    );
    // Fail open: members are still served, and what the list revokes is still refused.
    expect((await callAs(tlsOf("caller2"), member.url)).status).toBe(200);
    expect((await callAs(tlsOf("victim2"), member.url)).status).toBe(403);
  }, 120_000);
});

describe("a revoked bearer token", () => {
  it("tokens revoke ends the token's open stream before its task ends, as a revoked certificate's", async () => {
    expect((await cli("tok", "init-pki", "--name", "tok")).code).toBe(0);
    const made = await cli("tok", "tokens", "add", "outsider");
    expect(made.code, made.stderr).toBe(0);
    const token = made.stdout.trim();
    const node = await serve("tok", ...MODEL(), "--token-port", "0");
    const tokenUrl = (await node.waitForLine({ msg: /^token listener open/ })).url as string;
    const text = `[hold] ${crypto.randomUUID()}`;
    const stream = await openSseRequest(`${tokenUrl}/`, { ca: tlsOf("tok").ca } as ReturnType<typeof tlsOf>, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        accept: "text/event-stream",
        "a2a-version": "1.0",
        authorization: `Bearer ${token}`,
      },
      body: JSON.stringify({
        jsonrpc: "2.0",
        id: 1,
        method: "SendStreamingMessage",
        params: { message: userMessage(text) },
      }),
    });
    expect(stream.status).toBe(200);
    expect((await stream.next())?.data.result.task).toBeDefined();
    await model.arrival(text);

    const revoked = await cli("tok", "tokens", "revoke", "outsider");
    expect(revoked.code, revoked.stderr).toBe(0);
    const rest = await stream.settle();
    expect(rest.events.some((e) => e.data.result?.statusUpdate?.status?.state === "TASK_STATE_COMPLETED")).toBe(false);
    expect(revoked.stdout).toContain(
      `told the running serve (PID ${node.pid}) with SIGHUP: it closes the connections the token was used on, and their streams`,
    );
    expect(
      await node.waitForLine({
        msg: "refused a connection",
        kind: "revoked",
        reason: "token listener: closed an open connection: the token of 'token:outsider' was revoked",
      }),
    ).toBeTruthy();
    model.release(text);
  }, 120_000);
});

describe("renewal supersedes the certificate it replaces, once the new one is in use", () => {
  it("serve renews from its ca_peer, keeps working, and the CA node then refuses the old certificate", async () => {
    await fleet("ca3", "node3");
    const ca = await serve("ca3", "--executor", "echo", "--crl-refresh", "3600");
    expect((await cli("node3", "peers", "add", "ca3", ca.url)).code).toBe(0);
    const node = await serve("node3", "--executor", "echo", "--ca-peer", "ca3", "--crl-refresh", "3600");
    expect((await cli("ca3", "peers", "add", "node3", node.url)).code).toBe(0);
    const old = tlsOf("node3");
    expect((await callAs(old, ca.url)).status).toBe(200);

    // pki renew while serve runs: serve takes the new certificate, then the old one is revoked, superseded.
    const renewed = await cli("node3", "pki", "renew", "--ca-peer", "ca3", "--json");
    expect(renewed.code, renewed.stderr).toBe(0);
    const r = JSON.parse(renewed.stdout);
    expect(r.reloadedPid).toBe(node.pid);
    await node.waitForLine({ msg: "reloaded", applied: "certificate" });
    await ca.waitForLine({
      msg: "revoked a renewed certificate: its holder uses the new one",
      name: "node3",
      serial: r.previous.serial,
    });
    expect((await callAs(old, ca.url)).status).toBe(403);
    expect((await callAs(tlsOf("node3"), ca.url)).status).toBe(200);
    // Both ways still work with the new one.
    expect((await cli("node3", "send", "--agent", "ca3", "--task", "hi", "--wait")).code).toBe(0);
    expect((await cli("ca3", "send", "--agent", "node3", "--task", "hi", "--wait")).code).toBe(0);
    const list = JSON.parse((await cli("ca3", "pki", "list", "--json")).stdout) as {
      name: string;
      how: string;
      status: string;
      revokeReason?: string;
    }[];
    expect(list.filter((c) => c.name === "node3").map((c) => `${c.how}:${c.status}`)).toEqual([
      "bundle:revoked",
      "renew:valid",
    ]);
    expect(list.find((c) => c.name === "node3" && c.status === "revoked")?.revokeReason).toBe(
      `superseded: node3 renewed serial ${r.previous.serial} as ${r.serial}, now in use`,
    );
  }, 120_000);
});
