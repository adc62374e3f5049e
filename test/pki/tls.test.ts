import { afterEach, beforeAll, describe, expect, it } from "vitest";
import * as tls from "node:tls";
import { once } from "node:events";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { homePaths } from "../../src/home";
import { type CertAndKey, initPki, inspectCert, installBundle, issueBundle, loadNodeIdentity } from "../../pki";
import { makeFleet, tempDirs } from "./helpers";

const tmp = tempDirs();
let fleet: Awaited<ReturnType<typeof makeFleet>>;
const servers: tls.Server[] = [];

beforeAll(async () => {
  fleet = await makeFleet();
});
afterEach(() => {
  for (const s of servers.splice(0)) s.close();
});

/** An mTLS server as the daemon will run it: client certificates required and checked against the CA. */
async function mtlsServer(identity: CertAndKey, caPem: string) {
  const server = tls.createServer({ ...pair(identity), ca: caPem, requestCert: true, rejectUnauthorized: true });
  servers.push(server);
  let accepted = 0;
  server.on("secureConnection", (s) => {
    accepted++;
    s.end();
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  return { server, port: (server.address() as AddressInfo).port, accepted: () => accepted };
}

/** Resolves on close; events.once would reject on the 'error' a refused handshake also emits. */
function closed(socket: tls.TLSSocket): Promise<void> {
  return new Promise((resolve) => socket.once("close", () => resolve()));
}

function pair(id: CertAndKey) {
  return { cert: id.certPem, key: id.keyPem };
}

describe("mutual TLS with certificates from one fleet CA", () => {
  it("authorizes a peer from the same CA, on both sides, and identifies it by CN and fingerprint", async () => {
    const { server, port } = await mtlsServer(fleet.alice, fleet.ca.certPem);
    const serverSide = once(server, "secureConnection") as Promise<[tls.TLSSocket]>;
    const client = tls.connect({ host: "127.0.0.1", port, ca: fleet.ca.certPem, ...pair(fleet.bob) });
    await once(client, "secureConnect");
    const [socket] = await serverSide;

    expect(socket.authorized).toBe(true);
    const peer = socket.getPeerCertificate();
    expect(peer.subject.CN).toBe("bob");
    expect(peer.fingerprint256).toBe(inspectCert(fleet.bob.certPem).fingerprint256);
    expect(peer.serialNumber).toBe(inspectCert(fleet.bob.certPem).serialNumber);

    // The client verified the server by its IP SAN (no servername given).
    expect(client.authorized).toBe(true);
    expect(client.getPeerCertificate().subject.CN).toBe("alice");
    expect(client.getPeerCertificate().fingerprint256).toBe(inspectCert(fleet.alice.certPem).fingerprint256);
    client.destroy();
  });

  it("refuses a client whose certificate comes from a foreign CA, in the handshake", async () => {
    const { server, port, accepted } = await mtlsServer(fleet.alice, fleet.ca.certPem);
    const refused = once(server, "tlsClientError") as Promise<[Error]>;
    const client = tls.connect({ host: "127.0.0.1", port, ca: fleet.ca.certPem, ...pair(fleet.mallory) });
    const clientClosed = closed(client);
    client.on("error", () => {}); // the server's alert reaches the client as an error; expected here
    const [err] = await refused;
    expect(err).toBeInstanceOf(Error);
    await clientClosed;
    expect(accepted()).toBe(0);
  });

  it("refuses a client with no certificate at all", async () => {
    const { server, port, accepted } = await mtlsServer(fleet.alice, fleet.ca.certPem);
    const refused = once(server, "tlsClientError");
    const client = tls.connect({ host: "127.0.0.1", port, ca: fleet.ca.certPem });
    const clientClosed = closed(client);
    client.on("error", () => {});
    await refused;
    await clientClosed;
    expect(accepted()).toBe(0);
  });

  it("lets a client refuse a server from a foreign CA", async () => {
    const { port } = await mtlsServer(fleet.mallory, fleet.foreignCa.certPem);
    const client = tls.connect({ host: "127.0.0.1", port, ca: fleet.ca.certPem, ...pair(fleet.bob) });
    const [err] = (await once(client, "error")) as [NodeJS.ErrnoException];
    // The exact code depends on the TLS library (OpenSSL vs BoringSSL); any chain-verification failure will do.
    expect(err.code).toMatch(
      /UNABLE_TO_VERIFY_LEAF_SIGNATURE|UNABLE_TO_GET_ISSUER_CERT|SELF_SIGNED_CERT_IN_CHAIN|CERT_SIGNATURE_FAILURE/,
    );
    expect(client.authorized).toBe(false);
  });

  it("works end to end with identities from initPki and a bundle installed on another home", async () => {
    const a = homePaths(tmp());
    const b = homePaths(tmp());
    await initPki(a, { name: "alice" });
    await issueBundle(a, { name: "bob", out: join(b.root, "bob.bundle") });
    await installBundle(b, join(b.root, "bob.bundle"));
    const alice = await loadNodeIdentity(a);
    const bob = await loadNodeIdentity(b);

    const { server, port } = await mtlsServer(alice, alice.caPem);
    const serverSide = once(server, "secureConnection") as Promise<[tls.TLSSocket]>;
    // servername: the client checks the server's DNS SAN "alice", as a peer dialling by name would.
    const client = tls.connect({ host: "127.0.0.1", port, servername: "alice", ca: bob.caPem, ...pair(bob) });
    await once(client, "secureConnect");
    const [socket] = await serverSide;
    expect(socket.authorized).toBe(true);
    expect(socket.getPeerCertificate().subject.CN).toBe(bob.name);
    expect(socket.getPeerCertificate().fingerprint256).toBe(bob.fingerprint256);
    expect(client.getPeerCertificate().fingerprint256).toBe(alice.fingerprint256);
    client.destroy();
  });
});
