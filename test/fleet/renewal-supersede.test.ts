/**
 * Renewal supersedes, on a real CA node (in-process: real mutual TLS on loopback, certificates from our PKI,
 * the CA's real registry): a member that renews again and again presenting one certificate leaves two valid
 * ones (the one it presents and the latest), the one it presented is revoked once the new one is used, revoking
 * a serial revokes what was renewed from it, and a member the [[authorize]] policy refuses everything gets no
 * certificate. The switch of a running serve is in test/e2e/revocation.test.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { X509Certificate } from "node:crypto";
import { createCsr, openCaRegistry, revoke } from "../../pki";
import { DEFAULTS, type ServeConfig } from "../../src/config";
import { homePaths } from "../../src/home";
import { createLogger } from "../../src/log";
import { startNode, type RunningNode } from "../../src/node";
import { makeFleet, type Fleet, type TlsIdentity } from "../helpers/fleet";

let fleet: Fleet;
let node: RunningNode;

beforeAll(async () => {
  fleet = await makeFleet(["alpha", "beta", "gamma"]);
  const config: ServeConfig = {
    ...DEFAULTS,
    host: "127.0.0.1",
    port: 0,
    executor: "echo",
    auditLog: "off",
    crlRefreshMs: 3_600_000,
    // gamma is named in no table: the policy refuses it everything.
    authorize: [{ peers: ["alpha", "beta"], methods: ["*"] }],
  };
  node = await startNode(
    fleet.homes.alpha,
    config,
    createLogger(() => {}, "error"),
  );
});

afterAll(async () => {
  await node?.stop().catch(() => {});
  fleet?.cleanup();
});

const serialOf = (pem: string) => new X509Certificate(pem).serialNumber.toUpperCase().replace(/^0+(?=.)/, "");

/** POST /pki/renew as `who`, presenting its certificate, for its own key. */
async function renew(
  who: TlsIdentity,
  name: string,
): Promise<{ status: number; body: { cert?: string; error?: string; code?: string } }> {
  const { csrPem } = await createCsr({ name, sans: [], keyPem: who.key });
  const res = await fetch(`${node.url}/pki/renew`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ csr: csrPem, cert: who.cert }),
    keepalive: false,
    tls: who,
  } as RequestInit);
  return { status: res.status, body: (await res.json()) as { cert?: string; error?: string } };
}

/**
 * GET `path` as `who` on a connection of its own: the status. /health is 403 once its certificate is revoked;
 * /pki/crl shows the CA node which certificate it uses (and is answered to a revoked one too, with the list).
 */
async function getAs(who: TlsIdentity, path = "/health"): Promise<number> {
  const res = await fetch(`${node.url}${path}`, { keepalive: false, tls: who } as RequestInit);
  await res.arrayBuffer();
  return res.status;
}

function statuses(name: string): Record<string, string> {
  const registry = openCaRegistry(homePaths(fleet.homes.alpha));
  try {
    return Object.fromEntries(
      registry
        .list()
        .filter((c) => c.name === name)
        .map((c) => [c.serial, c.revokedAt ? `revoked: ${c.revokeReason}` : "valid"]),
    );
  } finally {
    registry.close();
  }
}

describe("renewal supersedes", () => {
  it("five renewals presenting one certificate leave it and the latest valid; using the latest revokes the one presented", async () => {
    const beta = fleet.identity("beta");
    const first = serialOf(beta.cert);
    const renewed: string[] = [];
    for (let i = 0; i < 5; i++) {
      const r = await renew(beta, "beta");
      expect(r.status, r.body.error).toBe(200);
      renewed.push(r.body.cert!);
    }
    const serials = renewed.map(serialOf);
    const after = statuses("beta");
    expect(after[first]).toBe("valid"); // beta may still need it: it has not used a new one yet
    expect(after[serials[4]!]).toBe("valid");
    for (const s of serials.slice(0, 4))
      expect(after[s]).toBe(`revoked: superseded: beta renewed serial ${first} as ${serials[serials.indexOf(s) + 1]}`);
    expect(Object.values(after).filter((v) => v === "valid")).toHaveLength(2);
    // A renewal never put to use is refused at once (the CA node reads the list it just signed).
    expect(await getAs({ ...beta, cert: renewed[0]! })).toBe(403);
    expect(await getAs(beta)).toBe(200);

    // beta uses the latest: the one it presented is revoked, superseded, and refused from the next connection.
    const latest = { ...beta, cert: renewed[4]! };
    expect(await getAs(latest)).toBe(200);
    // an A2A or health call is no /pki/ route: nothing is looked up there
    expect(statuses("beta")[first]).toBe("valid");
    expect(await getAs(latest, "/pki/crl")).toBe(200);
    expect(statuses("beta")[first]).toBe(
      `revoked: superseded: beta renewed serial ${first} as ${serials[4]}, now in use`,
    );
    expect(await getAs(beta)).toBe(403);
    expect(await getAs(latest)).toBe(200);

    // Revoking the serial the operator knows (the first) revokes what was renewed from it too.
    const r = await revoke(homePaths(fleet.homes.alpha), { target: first, reason: "key leaked" });
    expect(r.revoked.map((c) => c.serial)).toEqual([serials[4]]);
    expect(r.already.map((c) => c.serial).sort()).toEqual([first, ...serials.slice(0, 4)].sort());
    expect(await getAs(latest)).toBe(403);
  });

  it("a member the [[authorize]] policy refuses everything cannot renew: 403 saying why, nothing issued", async () => {
    const before = Object.keys(statuses("gamma"));
    const r = await renew(fleet.identity("gamma"), "gamma");
    expect(r.status).toBe(403);
    expect(r.body).toEqual({
      error:
        "renewal refused: this node's [[authorize]] policy lets peer 'gamma' call nothing, so it renews no certificate of it either; its operator can add 'gamma' to the peers of a rule",
      code: "RENEW_REFUSED",
    });
    expect(Object.keys(statuses("gamma"))).toEqual(before);
  });
});
