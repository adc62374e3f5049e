/**
 * What a client is told when it cannot talk to a peer, case by case, each against a real listener on
 * loopback: nothing listening, a plain-HTTP port, a port that speaks something else, a server whose
 * certificate is from another fleet, a server that refuses our certificate, and one that is fine. First the
 * probe's verdicts, then what `send` says and exits with.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createServer, type Server } from "node:net";
import { runCli } from "../../src/cli/registry";
import { bufferIo } from "../../src/cli/io";
import { probePeer, type Probe } from "../../src/client/probe";
import { listenMtls, type Listener } from "../../src/server/mtls-listener";
import { tooLargeResponse } from "../../src/server/request-router";
import { makeFleet, type Fleet, type TlsIdentity } from "../helpers/fleet";

let fleet: Fleet;
let other: Fleet;
let alpha: TlsIdentity;
const listeners: Listener[] = [];
let plainHttp: ReturnType<typeof Bun.serve>;
let banner: Server;
let urls: Record<"dead" | "plainHttp" | "banner" | "foreign" | "refusesUs" | "fine", string>;

function mtls(cert: TlsIdentity, clientCa: string): Promise<Listener> {
  return listenMtls({
    host: "127.0.0.1",
    port: 0,
    cert: cert.cert,
    key: cert.key,
    ca: clientCa,
    maxBodyBytes: 1 << 20,
    tooLarge: tooLargeResponse,
    onRequest: async () => ({ status: 200, headers: { "content-type": "application/json" }, body: "{}" }),
  }).then((l) => (listeners.push(l), l));
}

beforeAll(async () => {
  fleet = await makeFleet(["alpha", "beta"]);
  other = await makeFleet(["beta"]);
  alpha = fleet.identity("alpha");
  const beta = fleet.identity("beta");
  const dead = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response() });
  const deadPort = dead.port;
  dead.stop(true);
  plainHttp = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response("hello") });
  banner = createServer((s) => {
    s.on("error", () => {});
    s.end("SSH-2.0-OpenSSH_9.6\r\n");
  });
  banner.listen(0, "127.0.0.1");
  // Another fleet's beta; a server holding our beta's certificate that trusts another CA for its clients;
  // and our beta as it should be.
  const [foreign, refusesUs, fine] = await Promise.all([
    mtls(other.identity("beta"), other.identity("beta").ca),
    mtls(beta, other.identity("beta").ca),
    mtls(beta, beta.ca),
  ]);
  urls = {
    dead: `https://127.0.0.1:${deadPort}`,
    plainHttp: `https://127.0.0.1:${plainHttp.port}`,
    banner: `https://127.0.0.1:${(banner.address() as { port: number }).port}`,
    foreign: foreign.url,
    refusesUs: refusesUs.url,
    fine: fine.url,
  };
});
afterAll(async () => {
  for (const l of listeners) await l.close();
  plainHttp?.stop(true);
  banner?.close();
  fleet?.cleanup();
  other?.cleanup();
});

describe("probePeer", () => {
  it.each<[keyof typeof urls, Partial<Probe>]>([
    ["dead", { kind: "no-listener" }],
    ["plainHttp", { kind: "not-tls", plainHttp: true }],
    ["banner", { kind: "not-tls", plainHttp: false, banner: "SSH-2.0-OpenSSH_9.6" }],
    ["foreign", { kind: "foreign-certificate" }],
    ["refusesUs", { kind: "refused-us" }],
    ["fine", { kind: "ok" }],
  ])("%s → %o", async (which, expected) => {
    const probe = await probePeer(new URL(urls[which]), alpha);
    expect(probe).toMatchObject(expected);
    if (probe.kind === "foreign-certificate") {
      expect(probe.reason).toMatch(/not issued by our fleet CA/);
      expect(probe.certificate).toMatchObject({
        name: "beta",
        fingerprint: expect.stringMatching(/^([0-9A-F]{2}:){31}[0-9A-F]{2}$/),
      });
    }
    if (probe.kind === "ok") expect(probe.certificate.name).toBe("beta");
  });

  it("an unknown host name is unresolved", async () => {
    expect(await probePeer(new URL("https://no-such-host.invalid:9443"), alpha)).toEqual({ kind: "unresolved" });
  });
});

describe("what send says", () => {
  async function send(url: string) {
    const io = bufferIo();
    const code = await runCli(["--home", fleet.homes.alpha, "send", "--agent", url, "--task", "hello"], io);
    return { code, err: io.err(), out: io.out() };
  }

  it("a plain-HTTP port: exit 4, not TLS, use the mTLS port", async () => {
    const r = await send(urls.plainHttp);
    expect(r.code).toBe(4);
    expect(r.err).toContain(`${urls.plainHttp} answers plain HTTP, not TLS`);
    expect(r.err).toContain(
      "next: use the port 'a2a-node serve' logs as listen=https://… (9443 by default), not a --plain-http-port",
    );
  });

  it("a port that speaks something else: exit 4, naming what it said", async () => {
    const r = await send(urls.banner);
    expect(r.code).toBe(4);
    expect(r.err).toContain("does not speak TLS (it said 'SSH-2.0-OpenSSH_9.6'): wrong port?");
  });

  it("a server from another fleet: exit 8, naming its certificate", async () => {
    const r = await send(urls.foreign);
    expect(r.code).toBe(8);
    expect(r.err).toMatch(
      /presented a certificate from outside our fleet: it was not issued by our fleet CA \(\w+\) \(CN beta, issuer .+, fingerprint ([0-9A-F]{2}:){31}[0-9A-F]{2}, expires \d{4}-/,
    );
    expect(r.err).toContain("next: that machine belongs to another fleet");
  });

  it("a server that refuses our certificate: exit 8, naming ours (file, name, fingerprint, expiry)", async () => {
    const r = await send(urls.refusesUs);
    expect(r.code).toBe(8);
    expect(r.err).toMatch(
      /refused our certificate.*: .*certs\/node\.crt, CN alpha, fingerprint ([0-9A-F]{2}:){31}[0-9A-F]{2}, expires \d{4}-\d\d-\d\dT/,
    );
    expect(r.err).toContain("next: the peer must trust the CA that issued ours");
  });

  it("an unknown host: exit 4", async () => {
    const r = await send("https://no-such-host.invalid");
    expect(r.code).toBe(4);
    expect(r.err).toContain("cannot resolve the host name 'no-such-host.invalid'");
  });
});
