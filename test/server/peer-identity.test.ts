/**
 * Who a mutual-TLS connection is, on real sockets with real certificates: ours from the PKI, and crafted ones
 * signed by the same fleet CA key that `pki issue` would never make (reserved names, odd CNs). Server side
 * through listenMtls, client side through mtlsFetch.
 */
import "reflect-metadata";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type CertAndKey, createCa, issueLeaf } from "../../pki";
import { mtlsFetch, PeerIdentityError } from "../../src/client/mtls-fetch";
import { listenMtls, type Listener } from "../../src/server/mtls-listener";
import { tooLargeResponse } from "../../src/server/request-router";
import type { CallerIdentity } from "../../src/rpc/caller";
import { craftCert, craftIntermediateLeaf } from "../helpers/crafted-certs";
import type { x509 } from "../../pki/x509";
import { X509Certificate } from "node:crypto";
import { connect } from "node:tls";
import { once } from "node:events";

let ca: CertAndKey;
let server: CertAndKey;
let alice: CertAndKey;
let listener: Listener;
const callers: CallerIdentity[] = [];
const refusals: string[] = [];

beforeAll(async () => {
  ca = await createCa({ name: "peer identity test CA" });
  server = await issueLeaf({ ca, name: "server", sans: ["127.0.0.1"] });
  alice = await issueLeaf({ ca, name: "alice", sans: [] });
  listener = await listenMtls({
    host: "127.0.0.1",
    port: 0,
    cert: server.certPem,
    key: server.keyPem,
    ca: ca.certPem,
    maxBodyBytes: 1024,
    tooLarge: tooLargeResponse,
    onRequest: async (_req, caller) => {
      callers.push(caller);
      return { status: 200, headers: { "content-type": "application/json" }, body: JSON.stringify(caller) };
    },
    onHandshakeError: (err) => refusals.push(err.message),
  });
});
afterAll(async () => {
  await listener?.close();
});

/** A GET as `who`; the Response, or the error fetch rejected with. */
async function call(who: CertAndKey): Promise<{ res?: Response; body?: CallerIdentity; err?: { code?: string } }> {
  try {
    const res = await fetch(`${listener.url}/`, {
      tls: { cert: who.certPem, key: who.keyPem, ca: ca.certPem },
    } as RequestInit);
    return { res, body: (await res.json()) as CallerIdentity };
  } catch (err) {
    return { err: err as { code?: string } };
  }
}

// Each subject is signed by the fleet CA itself, so the TLS handshake verifies it; only the name is wrong.
const BAD_SUBJECTS: [string, x509.JsonName, RegExp][] = [
  ["the reserved name local", [{ CN: ["local"] }], /the name "local" is reserved: .*plain-HTTP/],
  ["the reserved name localhost", [{ CN: ["localhost"] }], /the name "localhost" is reserved/],
  ["an upper-case name", [{ CN: ["Alice"] }], /invalid name "Alice": a node name is issued in lower case/],
  ["an upper-case reserved name", [{ CN: ["LOCAL"] }], /the name "local" is reserved/],
  [
    "a Kelvin sign that lowercases to k",
    [{ CN: ["\u212Ailo"] }],
    /invalid name "\u212Ailo": a node name is issued in lower case/,
  ],
  ["a NUL byte", [{ CN: ["alice\u0000.evil"] }], /invalid name "alice\\u0000\.evil"/],
  ["a control character", [{ CN: ["ali\u0007ce"] }], /invalid name "ali\\u0007ce"/],
  ["a trailing newline", [{ CN: ["alice\n"] }], /invalid name "alice\\n"/],
  ["DN syntax in the CN", [{ CN: ["alice, CN=bob"] }], /invalid name "alice, CN=bob"/],
  ["an equals sign", [{ CN: ["alice=bob"] }], /invalid name "alice=bob"/],
  ["a dot", [{ CN: ["alice.lan"] }], /invalid name "alice.lan"/],
  ["an empty CN", [{ CN: [""] }], /invalid name "": must be 1 to 63 characters/],
  ["a 64-character CN", [{ CN: ["a".repeat(64)] }], /must be 1 to 63 characters/],
  ["two CNs in one RDN", [{ CN: ["alice", "bob"] }], /its subject has several CNs/],
  ["two CN RDNs", [{ CN: ["alice"] }, { CN: ["bob"] }], /its subject has several CNs/],
  ["a CN and an O", [{ CN: ["alice"] }, { O: ["evil"] }], /its subject "CN=alice\\nO=evil" is not a single CN/],
  ["no CN at all", [{ O: ["alice"] }], /its subject has no CN/],
];

describe("the server reads a caller's name exactly as the fleet issues it", () => {
  it("takes a certificate from our PKI, with its name and fingerprint as issued", async () => {
    const { res, body } = await call(alice);
    expect(res?.status).toBe(200);
    expect(body?.name).toBe("alice");
    expect(body?.fingerprint).toMatch(/^([0-9A-F]{2}:){31}[0-9A-F]{2}$/);
  });

  it.each(BAD_SUBJECTS)(
    "refuses a fleet-signed certificate with %s at the connection, before any request",
    async (_what, subject, reason) => {
      const crafted = await craftCert(ca, { subject });
      const handled = callers.length;
      const logged = refusals.length;
      const { res, err } = await call(crafted);
      expect(res).toBeUndefined();
      expect(err?.code).toMatch(/^(ECONNRESET|ConnectionClosed|EPIPE|ECONNABORTED|ERR_SSL_[A-Z0-9_]+)$/);
      expect(callers.length).toBe(handled);
      expect(refusals.slice(logged)).toHaveLength(1);
      expect(refusals[logged]).toMatch(/^client certificate refused: /);
      expect(refusals[logged]).toMatch(reason);
    },
  );

  it("still serves a fleet member after the refusals", async () => {
    const { res, body } = await call(alice);
    expect(res?.status).toBe(200);
    expect(body?.name).toBe("alice");
  });
});

describe("a client refuses a server whose certificate's name the fleet would not issue", () => {
  /** A fleet-signed server certificate with `subject`, serving on loopback. */
  async function serverWith(subject: x509.JsonName): Promise<Listener> {
    const crafted = await craftCert(ca, { subject });
    return listenMtls({
      host: "127.0.0.1",
      port: 0,
      cert: crafted.certPem,
      key: crafted.keyPem,
      ca: ca.certPem,
      maxBodyBytes: 1024,
      tooLarge: tooLargeResponse,
      onRequest: async () => ({ status: 200, body: "served" }),
    });
  }

  it.each([
    ["a bare URL", undefined],
    ["a named peer expecting that very name", "local"],
  ])("refuses CN=local via %s", async (_how, name) => {
    const impostor = await serverWith([{ CN: ["local"] }]);
    try {
      const fetchFn = mtlsFetch({ cert: alice.certPem, key: alice.keyPem, ca: ca.certPem }, { name });
      const err = await fetchFn(`${impostor.url}/`, {}).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(PeerIdentityError);
      expect((err as Error).message).toMatch(
        /^the server's certificate is not a fleet member's: the name "local" is reserved/,
      );
    } finally {
      await impostor.close();
    }
  });

  it.each([
    [[{ CN: ["Server"] }], /a node name is issued in lower case/],
    [[{ CN: ["server\u0000"] }], /invalid name "server\\u0000"/],
    [[{ CN: ["server", "x"] }], /several CNs/],
  ] as [x509.JsonName, RegExp][])("refuses %j", async (subject, reason) => {
    const impostor = await serverWith(subject);
    try {
      const err = await mtlsFetch({ cert: alice.certPem, key: alice.keyPem, ca: ca.certPem })(
        `${impostor.url}/`,
        {},
      ).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(PeerIdentityError);
      expect((err as Error).message).toMatch(reason);
    } finally {
      await impostor.close();
    }
  });

  it("talks to a server with a certificate from our PKI", async () => {
    const res = await mtlsFetch({ cert: alice.certPem, key: alice.keyPem, ca: ca.certPem }, { name: "server" })(
      `${listener.url}/`,
      {},
    );
    expect(res.status).toBe(200);
    expect(((await res.json()) as CallerIdentity).name).toBe("alice");
  });
});

describe("only leaves signed by the fleet CA itself are fleet members", () => {
  it("refuses a client presenting a leaf under an intermediate CA the fleet CA signed (Bun's TLS accepts that chain)", async () => {
    const { chain, leaf } = await craftIntermediateLeaf(ca, "sneaky");
    const handled = callers.length;
    const logged = refusals.length;
    const { res, err } = await call({ certPem: chain, keyPem: leaf.keyPem });
    expect(res).toBeUndefined();
    expect(err?.code).toMatch(/^(ECONNRESET|ConnectionClosed|EPIPE|ECONNABORTED)$/);
    expect(callers.length).toBe(handled);
    // Our refusal, not the handshake's: the TLS stack itself verified the chain through the intermediate.
    expect(refusals.slice(logged)).toEqual([
      'client certificate refused: it was not issued by the fleet CA itself (its issuer is "CN=sub-CA"; intermediate CAs are not accepted)',
    ]);
  });

  it("the same leaf without its intermediate fails the handshake itself", async () => {
    const { leaf } = await craftIntermediateLeaf(ca, "sneaky");
    const logged = refusals.length;
    const { res, err } = await call(leaf);
    expect(res).toBeUndefined();
    expect(err?.code).toMatch(/^(ECONNRESET|EPROTO|ERR_SSL_[A-Z0-9_]+|ECONNABORTED)$/);
    expect(refusals.slice(logged)).toHaveLength(1);
    expect(refusals[logged]).not.toMatch(/^client certificate refused/);
  });

  it("refuses a CA certificate the fleet CA signed, presented as a client's", async () => {
    const subCa = await craftCert(ca, { subject: [{ CN: ["sub-ca"] }], ca: true, pathLength: 0, tlsUsable: true });
    const logged = refusals.length;
    const { res } = await call(subCa);
    expect(res).toBeUndefined();
    expect(refusals.slice(logged)).toEqual(["client certificate refused: it is a CA certificate, not a node's"]);
  });

  /** A server presenting a leaf under an intermediate CA, and the intermediate. */
  async function intermediateServer(name: string): Promise<Listener> {
    const { chain, leaf } = await craftIntermediateLeaf(ca, name);
    return listenMtls({
      host: "127.0.0.1",
      port: 0,
      cert: chain,
      key: leaf.keyPem,
      ca: ca.certPem,
      maxBodyBytes: 1024,
      tooLarge: tooLargeResponse,
      onRequest: async () => ({ status: 200, body: "served" }),
    });
  }

  it("Bun's fetch alone accepts a server under an intermediate: the reason mtlsFetch checks the issuer", async () => {
    const impostor = await intermediateServer("sneaky");
    try {
      const res = await fetch(`${impostor.url}/`, {
        tls: { cert: alice.certPem, key: alice.keyPem, ca: ca.certPem },
      } as RequestInit);
      expect(await res.text()).toBe("served");
    } finally {
      await impostor.close();
    }
  });

  it.each([
    ["a bare URL", undefined],
    ["a named peer expecting that very name", "sneaky"],
  ])("a client refuses a server under an intermediate CA, via %s", async (_how, name) => {
    const impostor = await intermediateServer("sneaky");
    try {
      const err = await mtlsFetch({ cert: alice.certPem, key: alice.keyPem, ca: ca.certPem }, { name })(
        `${impostor.url}/`,
        {},
      ).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(PeerIdentityError);
      expect((err as Error).message).toBe(
        `the server's certificate is not a fleet member's: it was not issued by the fleet CA itself (its issuer is "CN=sub-CA"; intermediate CAs are not accepted)`,
      );
    } finally {
      await impostor.close();
    }
  });
});

describe("certificates refused for their dates, their purpose, or revocation", () => {
  const DAY = 86_400_000;
  const revokedSerials = new Map<string, Date>();
  const lookup = (serial: string) => revokedSerials.get(serial);
  let guarded: Listener;
  const why: string[] = [];
  const serialOf = (pem: string) => new X509Certificate(pem).serialNumber.replace(/^0+/, "");

  beforeAll(async () => {
    guarded = await listenMtls({
      host: "127.0.0.1",
      port: 0,
      cert: server.certPem,
      key: server.keyPem,
      ca: ca.certPem,
      maxBodyBytes: 1024,
      tooLarge: tooLargeResponse,
      revoked: lookup,
      onRequest: async (_req, caller) => ({
        status: 200,
        headers: { "content-type": "application/json" },
        body: JSON.stringify(caller),
      }),
      onHandshakeError: (err) => why.push(err.message),
    });
  });
  afterAll(async () => {
    await guarded?.close();
  });

  async function callGuarded(who: CertAndKey): Promise<{ status?: number; code?: string }> {
    try {
      const res = await fetch(`${guarded.url}/`, {
        tls: { cert: who.certPem, key: who.keyPem, ca: ca.certPem },
      } as RequestInit);
      await res.arrayBuffer();
      return { status: res.status };
    } catch (err) {
      return { code: (err as { code?: string }).code };
    }
  }

  it.each([
    [
      "an expired certificate",
      { notBefore: new Date(Date.now() - 10 * DAY), notAfter: new Date(Date.now() - DAY) },
      /^certificate has expired$/,
    ],
    [
      "a not-yet-valid certificate",
      { notBefore: new Date(Date.now() + DAY), notAfter: new Date(Date.now() + 10 * DAY) },
      /^certificate is not yet valid$/,
    ],
    ["a code-signing certificate", { eku: ["1.3.6.1.5.5.7.3.3"] }, /^unsupported certificate purpose$/],
    ["a server-only certificate", { eku: ["1.3.6.1.5.5.7.3.1"] }, /^unsupported certificate purpose$/],
    [
      "a certificate with no extended key usage (TLS takes it for any purpose)",
      { eku: [] },
      /^client certificate refused: its certificate is not for TLS client and server both \(extended key usage: none\)$/,
    ],
  ])("the server refuses %s, saying why", async (_what, opts, reason) => {
    const c = await craftCert(ca, { subject: [{ CN: ["alice"] }], ...opts });
    const n = why.length;
    const r = await callGuarded(c);
    expect(r.status).toBeUndefined();
    expect(why.slice(n)).toEqual([expect.stringMatching(reason)]);
  });

  it("refuses a revoked certificate at the next connection, and ends the connections it already has", async () => {
    const bob = await issueLeaf({ ca, name: "bob", sans: [] });
    expect((await callGuarded(bob)).status).toBe(200);

    // A keep-alive connection made before the revocation.
    const socket = connect({
      host: "127.0.0.1",
      port: new URL(guarded.url).port as unknown as number,
      cert: bob.certPem,
      key: bob.keyPem,
      ca: ca.certPem,
      servername: "server",
    });
    await once(socket, "secureConnect");
    socket.write("GET / HTTP/1.1\r\nHost: server\r\n\r\n");
    const [first] = await once(socket, "data");
    expect(String(first)).toMatch(/^HTTP\/1\.1 200/);
    const closed = once(socket, "close");

    revokedSerials.set(serialOf(bob.certPem), new Date("2030-01-01T00:00:00Z"));
    const n = why.length;
    // Ours, and the one fetch keeps alive from the first call: both are bob's.
    const dropped = guarded.dropRevoked?.() ?? 0;
    expect(dropped).toBeGreaterThanOrEqual(1);
    await closed;
    expect(why.slice(n)).toEqual(
      Array(dropped).fill(
        `closed an open connection: its certificate (serial ${serialOf(bob.certPem)}) was revoked on 2030-01-01T00:00:00.000Z`,
      ),
    );
    expect(guarded.dropRevoked?.()).toBe(0);

    const again = await callGuarded(bob);
    expect(again.status).toBeUndefined();
    expect(why.slice(n + dropped)).toEqual([
      `client certificate refused: its certificate (serial ${serialOf(bob.certPem)}) was revoked on 2030-01-01T00:00:00.000Z`,
    ]);
    expect((await callGuarded(alice)).status).toBe(200);
  });

  it("a client refuses a server whose certificate is revoked, before sending it anything", async () => {
    const asked: string[] = [];
    const revokedServer = await issueLeaf({ ca, name: "server", sans: ["127.0.0.1"] });
    const l = await listenMtls({
      host: "127.0.0.1",
      port: 0,
      cert: revokedServer.certPem,
      key: revokedServer.keyPem,
      ca: ca.certPem,
      maxBodyBytes: 1024,
      tooLarge: tooLargeResponse,
      onRequest: async (req) => {
        asked.push(req.target);
        return { status: 200, body: "served" };
      },
    });
    try {
      const tls = { cert: alice.certPem, key: alice.keyPem, ca: ca.certPem };
      const list = new Map([[serialOf(revokedServer.certPem), new Date("2030-01-01T00:00:00Z")]]);
      const err = await mtlsFetch(tls, { name: "server" }, (s) => list.get(s))(`${l.url}/secret`, {}).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(PeerIdentityError);
      expect((err as Error).message).toBe(
        `the server's certificate is not a fleet member's: its certificate (serial ${serialOf(revokedServer.certPem)}) was revoked on 2030-01-01T00:00:00.000Z`,
      );
      expect(asked).toEqual([]);
      // Without that list, the same server is talked to.
      expect((await mtlsFetch(tls, { name: "server" })(`${l.url}/ok`, {})).status).toBe(200);
    } finally {
      await l.close();
    }
  });

  it("a client refuses a server whose certificate is server-only or has no EKU", async () => {
    for (const eku of [["1.3.6.1.5.5.7.3.1"], []]) {
      const c = await craftCert(ca, { subject: [{ CN: ["server"] }], eku });
      const l = await listenMtls({
        host: "127.0.0.1",
        port: 0,
        cert: c.certPem,
        key: c.keyPem,
        ca: ca.certPem,
        maxBodyBytes: 1024,
        tooLarge: tooLargeResponse,
        onRequest: async () => ({ status: 200 }),
      });
      try {
        const err = await mtlsFetch({ cert: alice.certPem, key: alice.keyPem, ca: ca.certPem }, { name: "server" })(
          `${l.url}/`,
          {},
        ).then(
          () => undefined,
          (e: unknown) => e,
        );
        expect((err as Error).message).toMatch(
          /^the server's certificate is not a fleet member's: its certificate is not for TLS client and server both/,
        );
      } finally {
        await l.close();
      }
    }
  });
});
