/**
 * GET /health/ready fails for each of its causes, each named, on the compiled node: a dead model endpoint
 * (also warned about at start), a database file deleted or locked by another process, a certificate that
 * expires while the node runs. The admin port answers when the mTLS port cannot (an expired certificate).
 */
import "reflect-metadata";
import { Database } from "bun:sqlite";
import { X509Certificate } from "node:crypto";
import { rmSync, writeFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createCa, issueLeaf } from "../../pki";
import { homePaths } from "../../src/home";
import { serveBinary, type ServedBinary } from "../helpers/binary";
import { makeFleet, type Fleet, type TlsIdentity } from "../helpers/fleet";
import { scrape } from "../helpers/metrics";
import { get } from "../helpers/rpc";

let fleet: Fleet;
let alpha: TlsIdentity;
const nodes: ServedBinary[] = [];

beforeAll(async () => {
  fleet = await makeFleet(["ca", "alpha", "deadmodel", "deleted", "locked", "short"]);
  alpha = fleet.identity("alpha");
});

afterAll(async () => {
  await Promise.all(nodes.map((n) => n.stop("SIGKILL").catch(() => undefined)));
  fleet?.cleanup();
});

async function serve(name: string, args: string[]): Promise<{ node: ServedBinary; admin: string }> {
  const node = await serveBinary(fleet.homes[name], ["--admin-port", "0", ...args]);
  nodes.push(node);
  return { node, admin: (await node.waitForLine({ msg: /^admin port open/ })).url as string };
}

async function ready(admin: string): Promise<{ status: number; body: any }> {
  const res = await fetch(`${admin}/health/ready`);
  return { status: res.status, body: await res.json() };
}

/** A loopback port where nothing listens (the OS gave it to us, then we closed it). */
function deadPort(): number {
  const s = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response() });
  const port = s.port as number;
  s.stop(true);
  return port;
}

describe("GET /health/ready names what is wrong", () => {
  it("a model endpoint that does not answer: warned about at start, 503 with the check 'model' failed", async () => {
    const url = `http://127.0.0.1:${deadPort()}/v1`;
    const { node, admin } = await serve("deadmodel", ["--executor", "openai", "--model-url", url]);
    const warning = await node.waitForLine({ msg: /^the model endpoint does not answer/, level: "warn" });
    expect(warning).toMatchObject({
      executor: "openai",
      detail: expect.stringContaining(`${url}/models is unreachable`),
    });
    const r = await ready(admin);
    expect(r.status).toBe(503);
    expect(r.body).toMatchObject({
      ready: false,
      failed: ["model"],
      status: "not ready: model",
      checks: { database: { ok: true }, certificate: { ok: true }, model: { ok: false } },
    });
    expect(r.body.detail).toContain(`model: ${url}/models is unreachable`);
    // The same answer on the mTLS port, for a client with a fleet certificate; liveness is unaffected.
    expect((await get(`${node.url}/health/ready`, alpha)).status).toBe(503);
    expect((await fetch(`${admin}/health/live`)).status).toBe(200);
  });

  it("a database file deleted from under the node: 503 with 'database' failed, saying so", async () => {
    const { admin } = await serve("deleted", ["--executor", "echo"]);
    expect((await ready(admin)).status).toBe(200);
    const db = homePaths(fleet.homes.deleted).database;
    rmSync(db);
    const r = await ready(admin);
    expect(r.status).toBe(503);
    expect(r.body.failed).toEqual(["database"]);
    expect(r.body.checks.database.detail).toContain(`the database file ${db} is gone`);
  });

  it("a database another process holds locked: 503 while it does, 200 once it lets go", async () => {
    const { admin } = await serve("locked", ["--executor", "echo"]);
    const other = new Database(homePaths(fleet.homes.locked).database);
    other.exec("BEGIN EXCLUSIVE");
    try {
      const r = await ready(admin);
      expect(r.status).toBe(503);
      expect(r.body.failed).toEqual(["database"]);
      expect(r.body.checks.database.detail).toMatch(/database is locked .*another process holds a lock/);
    } finally {
      other.exec("ROLLBACK");
      other.close();
    }
    expect((await ready(admin)).status).toBe(200);
  });

  it("a certificate that expires while the node runs: 503 with 'certificate' failed; the admin port still answers", async () => {
    // Made by our PKI as if a day ago, for one day: it ends a few seconds from now. Its CA is made two days ago
    // (a CA cannot sign before it exists), and a client of that CA checks the node at the end.
    const home = homePaths(fleet.homes.short);
    const ca = await createCa({ name: "older fleet CA", now: new Date(Date.now() - 2 * 86_400_000) });
    const leaf = await issueLeaf({
      ca,
      name: "short",
      sans: ["localhost", "127.0.0.1"],
      days: 1,
      now: new Date(Date.now() - 86_400_000 + 4000),
    });
    const client = await issueLeaf({ ca, name: "client", sans: [], days: 30 });
    writeFileSync(home.caCert, ca.certPem);
    writeFileSync(home.nodeCert, leaf.certPem);
    writeFileSync(home.nodeKey, leaf.keyPem, { mode: 0o600 });
    const notAfter = new X509Certificate(leaf.certPem).validToDate;
    const { node, admin } = await serve("short", ["--executor", "echo"]);
    const before = await ready(admin);
    expect(before.status).toBe(200);
    expect(before.body.checks.certificate).toMatchObject({ ok: true, daysLeft: 0, notAfter: notAfter.toISOString() });
    expect(before.body.checks.certificate.detail).toMatch(/expires in 0 days: issue a new one/);
    expect((await scrape(admin)).value("a2a_node_certificate_expiry_timestamp_seconds")).toBe(
      notAfter.getTime() / 1000,
    );

    // The event awaited is the certificate's end.
    await Bun.sleep(Math.max(0, notAfter.getTime() - Date.now() + 50));
    const r = await ready(admin);
    expect(r.status).toBe(503);
    expect(r.body.failed).toEqual(["certificate"]);
    expect(r.body.checks.certificate.detail).toContain(`the certificate of short expired on ${notAfter.toISOString()}`);
    // Peers now refuse the node in the handshake: only the admin port can tell why.
    const err = await get(`${node.url}/health/ready`, {
      cert: client.certPem,
      key: client.keyPem,
      ca: ca.certPem,
    }).then(
      () => "answered",
      (e: NodeJS.ErrnoException) => e.code ?? e.message,
    );
    expect(err).toMatch(/EXPIRED/i);
  });
});
