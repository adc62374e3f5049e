/**
 * Unauthenticated connections are bounded on the mTLS listener: a client silent in its TLS handshake is
 * dropped after the handshake timeout (not Node's 120 s), connections beyond the total and per-address caps
 * are closed at once (counted from TCP accept, handshakes included), unauthenticated ones make room for new
 * ones (the oldest of the source holding the most goes), so silent strangers cannot keep a fleet member out,
 * and refusals are logged at a rate. Real TLS listener with our own PKI; raw TCP clients from several
 * loopback addresses.
 */
import "reflect-metadata";
import { afterEach, beforeAll, afterAll, describe, expect, it } from "vitest";
import { connect, createServer, type AddressInfo, type Socket } from "node:net";
import { connect as tlsConnect } from "node:tls";
import { once } from "node:events";
import { makeFleet, type Fleet } from "../helpers/fleet";
import { listenMtls, type Listener } from "../../src/server/mtls-listener";
import { tooLargeResponse } from "../../src/server/request-router";
import { RefusalLog } from "../../src/server/refusal-log";
import { ConnectionGate, EVICTED } from "../../src/server/connection-limits";
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
    const l = await listen({
      limits: { maxConnections: 3, maxConnectionsPerAddress: 2 },
      onRefusedConnection: (reason, remote) => refused.push(`${reason} ${remote}`),
    });
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

/** A fleet member's keep-alive TLS connection: each ask() sends GET `path` on it and resolves with the status. */
async function member(port: number, name = "alpha") {
  const id = fleet.identity(name);
  const s = tlsConnect({ port, host: "127.0.0.1", cert: id.cert, key: id.key, ca: id.ca, servername: "localhost" });
  sockets.push(s);
  const failed = new Promise<never>((_, reject) => {
    s.once("error", reject);
    s.once("close", () => reject(new Error("the node closed the member's connection")));
  });
  await Promise.race([once(s, "secureConnect"), failed]);
  let buf = "";
  return {
    socket: s,
    async ask(path: string): Promise<number> {
      buf = "";
      s.write(`GET ${path} HTTP/1.1\r\nhost: localhost\r\n\r\n`);
      const answered = new Promise<number>((resolve) => {
        const onData = (d: Buffer) => {
          buf += d.toString("latin1");
          const m = /^HTTP\/1\.1 (\d{3})[^]*?\r\n\r\n/.exec(buf);
          if (m) {
            s.off("data", onData);
            resolve(Number(m[1]));
          }
        };
        s.on("data", onData);
      });
      return Promise.race([answered, failed]);
    },
  };
}

/** 20 loopback source addresses, `perSource` silent connections from each; resolves once all are accepted by TCP. */
async function silentFlood(port: number, perSource: number): Promise<Socket[]> {
  const all: Promise<Socket>[] = [];
  for (let a = 2; a <= 21; a++) for (let i = 0; i < perSource; i++) all.push(silent(port, `127.0.0.${a}`));
  return Promise.all(all);
}

describe("silent strangers cannot keep a fleet member out (handshake slots)", () => {
  it("20 source addresses holding silent connections past every cap: a fleet member still gets in, and stays", async () => {
    const refused: string[] = [];
    const limits = { maxConnections: 40, maxConnectionsPerAddress: 4, maxHandshakes: 16 };
    const l = await listen({ limits, onRefusedConnection: (reason) => refused.push(reason) });
    // 80 silent connections on a listener that holds 40: before the fix they filled it, and the member was
    // closed at accept like any other connection over the cap.
    await silentFlood(l.port, 4);
    const alpha = await member(l.port);
    expect(await alpha.ask("/health")).toBe(200);
    expect(l.unauthenticatedConnections?.()).toBe(15); // the member's made room for itself, then authenticated
    expect(l.openConnections?.()).toBe(16);
    expect(refused.filter((r) => r === EVICTED)).toHaveLength(80 - 16 + 1);
    // Authenticated now: another flood evicts strangers only, and the member's connection goes on.
    await silentFlood(l.port, 4);
    expect(await alpha.ask("/health")).toBe(200);
    expect(l.unauthenticatedConnections?.()).toBe(16);
    expect(l.openConnections?.()).toBe(17);
  });

  it("only authenticated connections can fill a listener: then a new connection is closed at once", async () => {
    const refused: string[] = [];
    const l = await listen({
      limits: { maxConnections: 2, maxConnectionsPerAddress: 2, maxHandshakes: 2 },
      onRefusedConnection: (reason) => refused.push(reason),
    });
    const a = await member(l.port);
    const b = await member(l.port);
    expect([await a.ask("/health"), await b.ask("/health")]).toEqual([200, 200]);
    const third = await silent(l.port, "127.0.0.9");
    await closed(third);
    expect(refused).toEqual(["too many connections"]);
    expect(await a.ask("/health")).toBe(200);
  });

  it("a connection the gate closed is not also reported as a failed handshake", async () => {
    const errors: string[] = [];
    const refused: string[] = [];
    const l = await listen({
      limits: { maxConnections: 4, maxConnectionsPerAddress: 1, maxHandshakes: 4 },
      onRefusedConnection: (reason) => refused.push(reason),
      onHandshakeError: (err) => errors.push(err.message),
    });
    await silent(l.port, "127.0.0.5");
    const over = await silent(l.port, "127.0.0.5");
    await closed(over);
    // A full handshake after it: whatever the node made of the refused socket has been reported by now.
    expect(await (await member(l.port)).ask("/health")).toBe(200);
    expect(refused).toEqual(["too many connections from one address"]);
    expect(errors).toEqual([]);
  });
});

describe("ConnectionGate", () => {
  it("makes room by evicting the oldest unauthenticated connection of the source holding the most", async () => {
    const refused: string[] = [];
    const gate = new ConnectionGate(
      { maxConnections: 10, maxConnectionsPerAddress: 10, maxHandshakes: 3 },
      (reason, remote) => refused.push(`${reason === EVICTED ? "evicted" : reason} ${remote}`),
    );
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
      const a1 = await accept("127.0.0.1");
      const b1 = await accept("127.0.0.2");
      const a2 = await accept("127.0.0.1");
      expect(gate.handshakes()).toBe(3);
      // .1 holds two: its oldest goes for the newcomer.
      const c1 = await accept("127.0.0.3");
      expect([a1.destroyed, b1.destroyed, a2.destroyed, c1.destroyed]).toEqual([true, false, false, false]);
      expect(refused).toEqual(["evicted 127.0.0.1"]);
      expect(gate.count()).toBe(3);
      // An authenticated connection is out of reach: b1 is never evicted.
      gate.authenticated(b1);
      expect(gate.handshakes()).toBe(2);
      const c2 = await accept("127.0.0.3");
      expect(c2.destroyed).toBe(false); // room left: two unauthenticated of three
      const c3 = await accept("127.0.0.3");
      // Full again: .3 holds two (c1, c2), .1 one: c1 goes.
      expect([a2.destroyed, c1.destroyed, c2.destroyed, c3.destroyed]).toEqual([false, true, false, false]);
      const c4 = await accept("127.0.0.4");
      expect([a2.destroyed, c2.destroyed, c3.destroyed, c4.destroyed]).toEqual([false, true, false, false]);
      // One each from .1, .3 and .4: on a tie the source seen first goes (.1: a2).
      const c5 = await accept("127.0.0.5");
      expect([a2.destroyed, c3.destroyed, c4.destroyed, c5.destroyed, b1.destroyed]).toEqual([
        true,
        false,
        false,
        false,
        false,
      ]);
      expect(refused).toEqual(["evicted 127.0.0.1", "evicted 127.0.0.3", "evicted 127.0.0.3", "evicted 127.0.0.1"]);
      expect(gate.count()).toBe(4);
      expect(gate.count("127.0.0.3")).toBe(1);
    } finally {
      for (const s of serverSide) s.destroy();
      server.close();
    }
  });

  it("gives a closed connection's slot back, in all and for its address", async () => {
    const refused: string[] = [];
    const gate = new ConnectionGate({ maxConnections: 2, maxConnectionsPerAddress: 1 }, (reason) =>
      refused.push(reason),
    );
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
    const r = new RefusalLog(
      createLogger((l) => lines.push(l)),
      { detailedPerWindow: 2 },
    );
    r.refused('client certificate refused: the name "local" is reserved', "10.0.0.1");
    r.refused("peer did not return a certificate", "10.0.0.2");
    r.refused("peer did not return a certificate", "10.0.0.3");
    r.refused("too many connections from one address", "10.0.0.3");
    r.refused("too many connections from one address", "10.0.0.3");
    expect(lines).toHaveLength(2);
    expect(lines[0]).toContain("refused a connection remote=10.0.0.1 kind=certificate_refused");
    r.flush();
    expect(lines).toHaveLength(3);
    expect(lines[2]).toContain(
      "refused more connections than were logged one by one count=3 no_certificate=1 per_address_limit=2",
    );
    r.flush();
    expect(lines).toHaveLength(3); // nothing more to say
    r.refused("alert unknown ca", "10.0.0.9");
    expect(lines[3]).toContain("kind=foreign_ca"); // a new minute starts with detailed lines again
  });
});
