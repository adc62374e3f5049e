/**
 * One rule for a server, named or given by URL (src/client/mtls-fetch.ts): the certificate chains to the fleet
 * CA and is a fleet member's, it carries the expected fleet name, and it holds the pinned key (or, for an older
 * pin, is the pinned certificate). Each failure says which part failed, and connect.ts says what to do. Real
 * TLS on loopback with certificates from our PKI.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createPublicKey, X509Certificate } from "node:crypto";
import { createServer, type Server } from "node:https";
import type { AddressInfo } from "node:net";
import { keyPinOf, signPublicKey } from "../../pki";
import { explainFailure, resolveTarget, type Target } from "../../src/client/connect";
import {
  mtlsFetch,
  PeerIdentityError,
  expectationOf,
  type AcceptedPeer,
  type Expectation,
} from "../../src/client/mtls-fetch";
import type { Peer } from "../../src/peers/peer-registry";
import { craftCert } from "../helpers/crafted-certs";
import { makeFleet, type Fleet } from "../helpers/fleet";

let fleet: Fleet;
const servers: Server[] = [];

/** A server presenting `cert`/`key` (closing each connection, so every request is a new handshake). */
async function serve(cert: string, key: string): Promise<string> {
  const server = createServer(
    { cert, key, ca: fleet.identity("alpha").ca, requestCert: true, rejectUnauthorized: true },
    (_req, res) => {
      res.writeHead(200, { "content-type": "application/json", connection: "close" });
      res.end("{}");
    },
  );
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

let beta: string;
let betaRenewed: string;
let betaPin: string;
let betaFp: string;
let renewedFp: string;

beforeAll(async () => {
  fleet = await makeFleet(["alpha", "beta", "gamma"]);
  const b = fleet.identity("beta");
  beta = await serve(b.cert, b.key);
  betaPin = keyPinOf(b.cert);
  betaFp = new X509Certificate(b.cert).fingerprint256;
  // beta renewed as `pki renew` does by default: a new certificate for the same key.
  const renewed = await signPublicKey({
    ca: fleet.ca(),
    name: "beta",
    sans: ["127.0.0.1"],
    publicKey: createPublicKey(b.key).export({ type: "spki", format: "pem" }).toString(),
  });
  betaRenewed = await serve(renewed, b.key);
  renewedFp = new X509Certificate(renewed).fingerprint256;
});
afterAll(() => {
  for (const s of servers) (s.closeAllConnections(), s.close());
  fleet?.cleanup();
});

async function outcome(url: string, expect: Expectation, hooks = {}) {
  const f = mtlsFetch(fleet.identity("alpha"), expect, undefined, hooks);
  try {
    const res = await f(`${url}/x`, {});
    await res.text();
    return { ok: true as const, accepted: f.accepted() as AcceptedPeer };
  } catch (err) {
    return { ok: false as const, err: err as PeerIdentityError };
  }
}

const peer = (p: Partial<Peer> & { url: string }): Peer => ({ name: "beta", addedAt: "", ...p });
const targetOf = (p: Peer): Target => ({ label: `peer '${p.name}'`, baseUrl: p.url, rpcUrl: `${p.url}/`, peer: p });

describe("the one identity rule", () => {
  it("by name: the fleet name is the identity; the accepted identity is reported", async () => {
    const r = await outcome(beta, { name: "beta" });
    expect(r).toMatchObject({ ok: true, accepted: { name: "beta", keyPin: betaPin, fingerprint256: betaFp } });
  });

  it("by URL with no known name: any fleet member, and it says which (no host-name check: the fleet name is the identity)", async () => {
    const r = await outcome(beta, {});
    expect(r.ok && r.accepted.name).toBe("beta");
  });

  it("a different fleet name fails as 'name', naming both, with the next step for the peer's URL", async () => {
    const r = await outcome(beta, { name: "gamma", keyPin: betaPin });
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.err).toBeInstanceOf(PeerIdentityError);
    expect(r.err.failed).toBe("name");
    expect(r.err.message).toBe("the server is fleet node 'beta', not 'gamma' (the name its fleet certificate carries)");
    const why = explainFailure(r.err, targetOf(peer({ name: "gamma", url: beta })));
    expect(why.kind).toBe("refused");
    expect(why.message).toBe(
      `peer 'gamma' at ${beta} is not who we expected: the server is fleet node 'beta', not 'gamma' (the name its fleet certificate carries)`,
    );
    expect(why.hint).toBe(
      `${beta} now reaches 'beta', not 'gamma': check where gamma listens, then 'a2a-node peers add gamma https://HOST:PORT --pin --replace' (see 'a2a-node peers list')`,
    );
  });

  it("the right name with another key fails as 'pin', naming both keys, with how to re-pin", async () => {
    const other = keyPinOf(fleet.identity("gamma").cert);
    const r = await outcome(beta, { name: "beta", keyPin: other });
    if (r.ok) throw new Error("accepted");
    expect(r.err.failed).toBe("pin");
    expect(r.err.certPin).toBe(false);
    expect(r.err.message).toBe(
      `the server is 'beta' by its fleet certificate, but its public key ${betaPin} is not the pinned ${other}`,
    );
    expect(explainFailure(r.err, targetOf(peer({ url: beta, keyPin: other }))).hint).toBe(
      `beta now holds another key ('pki renew --rekey' there, or another machine holds a 'beta' certificate): compare the key pin with 'a2a-node pki show' on beta, then re-pin: 'a2a-node peers add beta ${beta} --pin --replace'`,
    );
  });

  it("a key pin survives the peer's renewal (same key, new certificate)", async () => {
    expect(renewedFp).not.toBe(betaFp);
    expect(await outcome(betaRenewed, expectationOf(peer({ url: betaRenewed, keyPin: betaPin })))).toMatchObject({
      ok: true,
      accepted: { keyPin: betaPin, fingerprint256: renewedFp },
    });
  });

  it("an older certificate pin: the pinned certificate is accepted and its key offered for conversion; a renewed one fails as 'pin' (certificate)", async () => {
    const converted: AcceptedPeer[] = [];
    const hooks = { certPinMatched: (a: AcceptedPeer) => converted.push(a) };
    expect((await outcome(beta, expectationOf(peer({ url: beta, fingerprint: betaFp.toLowerCase() })), hooks)).ok).toBe(
      true,
    );
    expect(converted.map((a) => a.keyPin)).toEqual([betaPin]);
    const r = await outcome(betaRenewed, expectationOf(peer({ url: betaRenewed, fingerprint: betaFp })), hooks);
    if (r.ok) throw new Error("accepted");
    expect(r.err.failed).toBe("pin");
    expect(r.err.certPin).toBe(true);
    expect(r.err.message).toBe(
      `the server is 'beta' by its fleet certificate, but that certificate (fingerprint ${renewedFp}) is not the pinned ${betaFp} (a pin of one certificate, from before key pins: a renewal replaces the certificate)`,
    );
    expect(explainFailure(r.err, targetOf(peer({ url: betaRenewed, fingerprint: betaFp }))).hint).toBe(
      `beta was pinned by one certificate, which its renewal has replaced: compare the key pin with 'a2a-node pki show' on beta, then pin its key (renewals keep it): 'a2a-node peers add beta ${betaRenewed} --pin --replace'`,
    );
    expect(converted).toHaveLength(1);
    // A key pin takes precedence over an older certificate pin left beside it.
    expect((await outcome(betaRenewed, { name: "beta", keyPin: betaPin, certFingerprint: betaFp })).ok).toBe(true);
  });

  it("a certificate from the fleet CA that is not a node's (no clientAuth) fails as 'not-member'", async () => {
    const odd = await craftCert(fleet.ca(), { subject: [{ CN: ["beta"] }], eku: ["1.3.6.1.5.5.7.3.1"] });
    const url = await serve(odd.certPem, odd.keyPem);
    const r = await outcome(url, { name: "beta" });
    if (r.ok) throw new Error("accepted");
    expect(r.err.failed).toBe("not-member");
    expect(r.err.message).toMatch(
      /^the server's certificate is not a fleet member's: its certificate is not for TLS client and server both/,
    );
    expect(explainFailure(r.err, targetOf(peer({ url }))).hint).toMatch(
      /compare the CA fingerprints of 'a2a-node pki show' on both machines/,
    );
  });

  it("a URL that is a registered peer's URL is held to that peer's name and pin", () => {
    const registered = [peer({ url: "https://10.0.0.7:9443", keyPin: betaPin })];
    const peers = { get: (n: string) => registered.find((p) => p.name === n), list: () => registered };
    expect(resolveTarget("https://10.0.0.7", peers)).toMatchObject({
      label: "peer 'beta'",
      peer: { name: "beta", keyPin: betaPin },
    });
    expect(resolveTarget("https://10.0.0.8:9443", peers)).toMatchObject({ label: "https://10.0.0.8:9443" });
    expect(resolveTarget("https://10.0.0.8:9443", peers)?.peer).toBeUndefined();
  });
});
