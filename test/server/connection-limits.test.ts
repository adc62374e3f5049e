/**
 * Unauthenticated connections are bounded on the mTLS listener: a client silent in its TLS handshake is
 * dropped after the handshake timeout (not Node's 120 s), connections beyond the total and per-address caps
 * are closed at once (counted from TCP accept, handshakes included), and refusals are logged at a rate.
 * Real TLS listener with our own PKI; raw TCP clients from several loopback addresses.
 */
import "reflect-metadata";
import { afterEach, beforeAll, afterAll, describe, expect, it } from "vitest";
import { connect, createServer, type AddressInfo, type Socket } from "node:net";
import { once } from "node:events";
import { makeFleet, type Fleet } from "../helpers/fleet";
import { listenMtls, type Listener } from "../../src/server/mtls-listener";
import { tooLargeResponse } from "../../src/server/request-router";
import { RefusalLog } from "../../src/server/refusal-log";
import { ConnectionGate } from "../../src/server/connection-limits";
import { createLogger } from "../../src/log";

let fleet: Fleet;
const listeners: Listener[] = [];
const sockets: Socket[] = [];
beforeAll(async () => {
  fleet = await makeFleet(["alpha"]);
});
afterAll(() => fleet.cleanup());
afterEach(async () => {
  for (const s of sockets.splice(0)) s.destroy();
  for (const l of listeners.splice(0)) await l.close();
});

async function listen(extra: Partial<Parameters<typeof listenMtls>[0]>): Promise<Listener> {
  const me = fleet.identity("alpha");
  const l = await listenMtls({
    host: "127.0.0.1",
    port: 0,
    cert: me.cert,
    key: me.key,
    ca: me.ca,
    maxBodyBytes: 1024,
    tooLarge: tooLargeResponse,
    onRequest: async () => ({ status: 200, body: "ok" }),
    ...extra,
  });
  listeners.push(l);
  return l;
}

/** A raw TCP connection that never starts its TLS handshake. */
async function silent(port: number, from = "127.0.0.1"): Promise<Socket> {
  const s = connect({ port, host: "127.0.0.1", localAddress: from });
  sockets.push(s);
  s.on("error", () => {});
  await once(s, "connect");
  return s;
}
const closed = (s: Socket) => (s.destroyed || s.closed ? Promise.resolve() : once(s, "close").then(() => undefined));

describe("the mTLS listener's bounds on unauthenticated connections", () => {
  it("drops a client that never finishes its handshake after the handshake timeout, and says so", async () => {
    const errors: string[] = [];
    const l = await listen({ handshakeTimeoutMs: 200, onHandshakeError: (err) => errors.push(err.message) });
    const s = await silent(l.port);
    await closed(s);
    expect(s.destroyed).toBe(true);
    expect(errors).toEqual([expect.stringMatching(/timeout/i)]);
  });

  it("closes connections beyond the per-address cap and the total cap at once; counted from TCP accept, before any handshake", async () => {
    const refused: string[] = [];
    const l = await listen({ limits: { maxConnections: 3, maxConnectionsPerAddress: 2 }, onRefusedConnection: (reason, remote) => refused.push(`${reason} ${remote}`) });
    await silent(l.port, "127.0.0.1");
    await silent(l.port, "127.0.0.1");
    const a3 = await silent(l.port, "127.0.0.1");
    await closed(a3);
    expect(refused).toEqual(["too many connections from one address 127.0.0.1"]);
    await silent(l.port, "127.0.0.2");
    const c1 = await silent(l.port, "127.0.0.3");
    await closed(c1);
    expect(refused[1]).toBe("too many connections 127.0.0.3");

  });
});

describe("ConnectionGate", () => {
  it("gives a closed connection's slot back, in all and for its address", async () => {
    const refused: string[] = [];
    const gate = new ConnectionGate({ maxConnections: 2, maxConnectionsPerAddress: 1 }, (reason) => refused.push(reason));
    const serverSide: Socket[] = [];
    const arrived: Array<(s: Socket) => void> = [];
    const server = createServer((s) => {
      s.on("error", () => {});
      if (gate.admit(s)) serverSide.push(s);
      arrived.shift()?.(s);
    });
    server.listen(0, "127.0.0.1");
    await once(server, "listening");
    const port = (server.address() as AddressInfo).port;
    const accept = async (from: string) => {
      const got = new Promise<Socket>((r) => arrived.push(r));
      await silent(port, from);
      return got;
    };
    try {
      const a = await accept("127.0.0.1");
      await accept("127.0.0.2");
      expect(gate.count()).toBe(2);
      const third = await accept("127.0.0.3");
      expect(third.destroyed).toBe(true);
      expect(refused).toEqual(["too many connections"]);
      const sameAddress = await accept("127.0.0.1");
      expect(sameAddress.destroyed).toBe(true);

      // The server side of the first connection closes: its slot, and its address's, are free again.
      const gone = once(a, "close");
      a.destroy();
      await gone;
      expect(gate.count()).toBe(1);
      expect(gate.count("127.0.0.1")).toBe(0);
      const again = await accept("127.0.0.1");
      expect(again.destroyed).toBe(false);
      expect(gate.count("127.0.0.1")).toBe(1);
      expect(refused).toHaveLength(2);
    } finally {
      for (const s of serverSide) s.destroy();
      server.close();
    }
  });
});

describe("RefusalLog", () => {
  it("logs the first refusals of a minute one by one, then sums up the rest by kind", () => {
    const lines: string[] = [];
    const r = new RefusalLog(createLogger((l) => lines.push(l)), { detailedPerWindow: 2 });
    r.refused("client certificate refused: the name \"local\" is reserved", "10.0.0.1");
    r.refused("peer did not return a certificate", "10.0.0.2");
    r.refused("peer did not return a certificate", "10.0.0.3");
    r.refused("too many connections from one address", "10.0.0.3");
    r.refused("too many connections from one address", "10.0.0.3");
    expect(lines).toHaveLength(2);
    expect(lines[0]).toContain("refused a connection remote=10.0.0.1 kind=certificate_refused");
    r.flush();
    expect(lines).toHaveLength(3);
    expect(lines[2]).toContain("refused more connections than were logged one by one count=3 no_certificate=1 per_address_limit=2");
    r.flush();
    expect(lines).toHaveLength(3); // nothing more to say
    r.refused("alert unknown ca", "10.0.0.9");
    expect(lines[3]).toContain("kind=foreign_ca"); // a new minute starts with detailed lines again
  });
});
