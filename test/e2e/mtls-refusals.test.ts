/**
 * One served binary and the clients that must not get in: foreign-CA certificates, no certificate, forged
 * identity headers, and fleet members reaching for each other's tasks.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { listenMtls } from "../../src/server/mtls-listener";
import { tooLargeResponse } from "../../src/server/request-router";
import { runBinary, serveBinary, type ServedBinary } from "../helpers/binary";
import { makeFleet, type Fleet, type TlsIdentity } from "../helpers/fleet";
import { craftCert, craftIntermediateLeaf } from "../helpers/crafted-certs";
import { get, rpc, userMessage } from "../helpers/rpc";

let fleet: Fleet;
let node: ServedBinary;
let exitCode: number | undefined;
let alpha: TlsIdentity;
let gamma: TlsIdentity;
let mallory: TlsIdentity;

let plainUrl: string;

beforeAll(async () => {
  fleet = await makeFleet(["beta", "alpha", "gamma"]);
  // Every refusal logged one by one: the tests below look for the line of theirs.
  node = await serveBinary(fleet.homes.beta, [
    "--executor",
    "echo",
    "--plain-http-port",
    "0",
    "--log-refusals-per-minute",
    "100000",
  ]);
  void node.exited.then((c) => (exitCode = c));
  plainUrl = (await node.waitForLine({ msg: /^plain-HTTP listener open on loopback/, level: "warn" })).url as string;
  expect(plainUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
  alpha = fleet.identity("alpha");
  gamma = fleet.identity("gamma");
  mallory = await fleet.foreign("mallory");
});

afterAll(async () => {
  await node?.stop("SIGKILL");
  fleet?.cleanup();
});

type Route = { name: string; path: string; init: RequestInit };
const ROUTES: Route[] = [
  {
    name: "JSON-RPC POST",
    path: "/",
    init: {
      method: "POST",
      headers: { "content-type": "application/json", "a2a-version": "1.0" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "ListTasks", params: {} }),
    },
  },
  { name: "agent card", path: "/.well-known/agent-card.json", init: { method: "GET" } },
  { name: "health", path: "/health", init: { method: "GET" } },
];

/** Resolves with the Response, or with the error fetch rejected with. */
async function attempt(route: Route, tls: Partial<TlsIdentity>): Promise<{ res?: Response; err?: any }> {
  try {
    const res = await fetch(`${node.url}${route.path}`, { ...route.init, tls } as RequestInit);
    await res.arrayBuffer();
    return { res };
  } catch (err) {
    return { err };
  }
}

/** The ways Bun's fetch reports a TLS handshake the server ended (alert, reset) on this platform. */
const HANDSHAKE_FAILURE = /^(ECONNRESET|EPROTO|ERR_SSL_[A-Z0-9_]+|UNABLE_TO_[A-Z_]+|ECONNABORTED)$/;
/** How it reports a connection the server closed right after a handshake that verified the chain. */
const REFUSED_AFTER_HANDSHAKE = /^(ECONNRESET|ConnectionClosed|EPIPE|ECONNABORTED)$/;

describe("mutual TLS refusals", () => {
  describe.each(ROUTES)("$name", (route) => {
    it("refuses a certificate from a foreign CA in the handshake (no HTTP response)", async () => {
      const { res, err } = await attempt(route, mallory);
      expect(res).toBeUndefined();
      expect(err?.code).toMatch(HANDSHAKE_FAILURE);
    });

    it("refuses a client with no certificate in the handshake (no HTTP response)", async () => {
      // It trusts the fleet CA, so only the server's demand for a client certificate can fail it.
      const { res, err } = await attempt(route, { ca: alpha.ca });
      expect(res).toBeUndefined();
      expect(err?.code).toMatch(HANDSHAKE_FAILURE);
    });

    it("answers a fleet client with 200", async () => {
      const { res, err } = await attempt(route, alpha);
      expect(err).toBeUndefined();
      expect(res?.status).toBe(200);
    });
  });

  it("serves an A2A v1.0 agent card with an mTLS security scheme and the served port", async () => {
    const r = await get(`${node.url}/.well-known/agent-card.json`, alpha);
    expect(r.status).toBe(200);
    expect(r.headers.get("content-type")).toMatch(/application\/json/);
    const card = r.body;
    expect(card.name).toBe("beta");
    expect(card.description).toEqual(expect.any(String));
    expect(card.description.length).toBeGreaterThan(0);
    expect(card.version).toEqual(expect.any(String));
    expect(card.supportedInterfaces).toEqual(expect.any(Array));
    const iface = card.supportedInterfaces[0];
    expect(iface).toMatchObject({ url: expect.any(String), protocolBinding: "JSONRPC", protocolVersion: "1.0" });
    const ifaceUrl = new URL(iface.url);
    expect(ifaceUrl.protocol).toBe("https:");
    expect(Number(ifaceUrl.port)).toBe(node.port);
    expect(card.capabilities).toEqual(expect.any(Object));
    expect(card.defaultInputModes).toEqual(expect.arrayContaining([expect.any(String)]));
    expect(card.defaultOutputModes).toEqual(expect.arrayContaining([expect.any(String)]));
    expect(card.skills.length).toBeGreaterThan(0);
    for (const skill of card.skills)
      expect(skill).toMatchObject({
        id: expect.any(String),
        name: expect.any(String),
        description: expect.any(String),
        tags: expect.any(Array),
      });
    const schemes = Object.values(card.securitySchemes ?? {}) as Record<string, unknown>[];
    expect(schemes.some((s) => s && typeof s === "object" && "mtlsSecurityScheme" in s)).toBe(true);
  });

  it("/health names the caller from its certificate, whatever identity headers say", async () => {
    const plain = await get(`${node.url}/health`, alpha);
    expect(plain.status).toBe(200);
    expect(plain.body.caller).toBe("alpha");

    const forged: Record<string, string>[] = [
      { "x-client-cert-cn": "mallory" },
      { "x-forwarded-client-cert": 'Hash=00;Subject="CN=mallory";URI=spiffe://x/mallory' },
      { "x-ssl-client-s-dn": "CN=mallory", "x-client-cert": "mallory", "x-a2a-caller": "mallory", caller: "mallory" },
    ];
    for (const headers of forged) {
      const res = await fetch(`${node.url}/health`, { headers, tls: alpha } as RequestInit);
      expect(res.status).toBe(200);
      expect(((await res.json()) as { caller?: string }).caller).toBe("alpha");
    }
    const asGamma = await get(`${node.url}/health`, gamma);
    expect(asGamma.body.caller).toBe("gamma");
  });

  it("scopes tasks to the caller: alpha's task is invisible to gamma, exactly like a random id", async () => {
    const sent = await rpc(node.url, alpha, "SendMessage", { message: userMessage("alpha's secret") });
    expect(sent.body.error).toBeUndefined();
    const id: string = sent.body.result.task.id;
    expect(sent.body.result.task.status.state).toBe("TASK_STATE_COMPLETED");

    const own = await rpc(node.url, alpha, "GetTask", { id });
    expect(own.body.result.id).toBe(id);

    const randomId = crypto.randomUUID();
    const theirs = await rpc(node.url, gamma, "GetTask", { id });
    const random = await rpc(node.url, gamma, "GetTask", { id: randomId });
    expect(theirs.status).toBe(random.status);
    expect(theirs.body.error.code).toBe(-32001);
    expect(random.body.error.code).toBe(-32001);
    // Same answer but for the id that was asked about: nothing tells gamma the task exists.
    const masked = (e: unknown, asked: string) => JSON.parse(JSON.stringify(e).split(asked).join("<id>"));
    expect(masked(theirs.body.error, id)).toEqual(masked(random.body.error, randomId));

    const cancel = await rpc(node.url, gamma, "CancelTask", { id });
    expect(cancel.body.error.code).toBe(-32001);
    const follow = await rpc(node.url, gamma, "SendMessage", { message: userMessage("me too", { taskId: id }) });
    expect(follow.body.error.code).toBe(-32001);

    const listGamma = await rpc(node.url, gamma, "ListTasks", {});
    expect(listGamma.body.error).toBeUndefined();
    expect(listGamma.body.result.tasks.map((t: { id: string }) => t.id)).not.toContain(id);
    const listAlpha = await rpc(node.url, alpha, "ListTasks", {});
    expect(listAlpha.body.result.tasks.map((t: { id: string }) => t.id)).toContain(id);

    // And alpha's task is untouched by gamma's attempts.
    const after = await rpc(node.url, alpha, "GetTask", { id });
    expect(after.body.result.status.state).toBe("TASK_STATE_COMPLETED");
  });

  describe("names a fleet CA signed but the fleet never issues", () => {
    /** A certificate with CN `cn`, signed by the fleet CA's key directly (`pki issue` would refuse the name). */
    const crafted = async (cn: string): Promise<TlsIdentity> => {
      const c = await craftCert(fleet.ca(), { subject: [{ CN: [cn] }] });
      return { cert: c.certPem, key: c.keyPem, ca: alpha.ca };
    };
    const plainRpc = async (method: string, params: unknown) => {
      const res = await fetch(plainUrl, {
        method: "POST",
        headers: { "content-type": "application/json", "a2a-version": "1.0" },
        body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
      });
      return (await res.json()) as any;
    };

    it("a certificate named 'local' is refused at the connection and never reaches the plain-HTTP listener's tasks", async () => {
      const made = await plainRpc("SendMessage", { message: userMessage("a local tool's task") });
      const localTask: string = made.result.task.id;
      expect((await plainRpc("GetTask", { id: localTask })).result.id).toBe(localTask);
      const health = (await (await fetch(`${plainUrl}/health`)).json()) as { caller?: string };
      expect(health.caller).toBe("@local");

      const impostor = await crafted("local");
      for (const route of ROUTES) {
        const { res, err } = await attempt(route, impostor);
        expect(res).toBeUndefined();
        expect(err?.code).toMatch(REFUSED_AFTER_HANDSHAKE);
      }
      const got = await rpc(node.url, impostor, "GetTask", { id: localTask }).then(
        () => "answered",
        (e) => e.code,
      );
      expect(got).toMatch(REFUSED_AFTER_HANDSHAKE);
      expect(
        await node.waitForLine({
          msg: "refused a connection",
          kind: "certificate_refused",
          reason: /client certificate refused: the name "local" is reserved/,
        }),
      ).toBeTruthy();

      // Nor does any fleet member share the plain listener's tasks, either way.
      expect((await rpc(node.url, alpha, "GetTask", { id: localTask })).body.error.code).toBe(-32001);
      const alphas = await rpc(node.url, alpha, "SendMessage", { message: userMessage("alpha's own") });
      expect((await plainRpc("GetTask", { id: alphas.body.result.task.id })).error.code).toBe(-32001);
      expect((await plainRpc("ListTasks", {})).result.tasks.map((t: { id: string }) => t.id)).toEqual([localTask]);
      // The fleet PKI's routes are on the mutual-TLS listener only.
      expect((await fetch(`${plainUrl}/pki/crl`)).status).toBe(404);
      expect(
        (
          await fetch(`${plainUrl}/pki/renew`, {
            method: "POST",
            headers: { "content-type": "application/json" },
            body: "{}",
          })
        ).status,
      ).toBe(404);
    });

    it.each([
      ["upper case", "Alpha"],
      ["a NUL byte", "alpha\u0000"],
      ["a control character", "al\u001bpha"],
      ["DN syntax", "alpha, CN=gamma"],
      ["the reserved name localhost", "localhost"],
    ])("a certificate whose CN has %s is refused at the connection", async (_what, cn) => {
      const { res, err } = await attempt(ROUTES[0], await crafted(cn));
      expect(res).toBeUndefined();
      expect(err?.code).toMatch(REFUSED_AFTER_HANDSHAKE);
    });
  });

  describe("certificates the fleet CA signed but out of date or for another purpose", () => {
    const DAY = 86_400_000;
    it.each([
      [
        "expired",
        { notBefore: new Date(Date.now() - 10 * DAY), notAfter: new Date(Date.now() - DAY) },
        { kind: "expired", reason: "certificate has expired" },
      ],
      [
        "not yet valid",
        { notBefore: new Date(Date.now() + DAY), notAfter: new Date(Date.now() + 10 * DAY) },
        { kind: "not_yet_valid", reason: "certificate is not yet valid" },
      ],
      [
        "for code signing",
        { eku: ["1.3.6.1.5.5.7.3.3"] },
        { kind: "wrong_purpose", reason: "unsupported certificate purpose" },
      ],
      [
        "without extended key usage",
        { eku: [] },
        {
          kind: "wrong_purpose",
          reason:
            "client certificate refused: its certificate is not for TLS client and server both (extended key usage: none)",
        },
      ],
    ])("a certificate %s is refused at the connection, the reason logged", async (what, opts, logged) => {
      const c = await craftCert(fleet.ca(), { subject: [{ CN: [`odd-${what.split(" ")[0]}`] }], ...opts });
      const { res, err } = await attempt(ROUTES[0], { cert: c.certPem, key: c.keyPem, ca: alpha.ca });
      expect(res).toBeUndefined();
      expect(err?.code).toMatch(/^(ECONNRESET|EPROTO|ERR_SSL_[A-Z0-9_]+|ECONNABORTED|ConnectionClosed|EPIPE)$/);
      expect(await node.waitForLine({ msg: "refused a connection", level: "warn", ...logged })).toBeTruthy();
    });
  });

  describe("certificates under an intermediate CA the fleet CA signed", () => {
    it("a client presenting a leaf and its intermediate is refused at the connection, on every route", async () => {
      const { chain, leaf } = await craftIntermediateLeaf(fleet.ca(), "sneaky");
      const sneaky: TlsIdentity = { cert: chain, key: leaf.keyPem, ca: alpha.ca };
      for (const route of ROUTES) {
        const { res, err } = await attempt(route, sneaky);
        expect(res).toBeUndefined();
        expect(err?.code).toMatch(REFUSED_AFTER_HANDSHAKE);
      }
      expect(
        await node.waitForLine({
          msg: "refused a connection",
          reason: /client certificate refused: it was not issued by the fleet CA itself/,
        }),
      ).toBeTruthy();
    });

    it("'a2a-node send' refuses a server presenting one, before sending it anything", async () => {
      const { chain, leaf } = await craftIntermediateLeaf(fleet.ca(), "sneaky");
      let asked = 0;
      const impostor = await listenMtls({
        host: "127.0.0.1",
        port: 0,
        cert: chain,
        key: leaf.keyPem,
        ca: alpha.ca,
        maxBodyBytes: 1 << 20,
        tooLarge: tooLargeResponse,
        onRequest: async () => {
          asked++;
          return { status: 500 };
        },
      });
      try {
        const r = await runBinary(["--home", fleet.homes.alpha, "send", "--agent", impostor.url, "--task", "secrets"]);
        expect(r.code).toBe(8); // refused
        expect(r.stderr).toMatch(
          /is not who we expected: the server's certificate is not a fleet member's: it was not issued by the fleet CA itself/,
        );
        expect(asked).toBe(0);
      } finally {
        await impostor.close();
      }
    });
  });

  it("still serves after all the refusals", async () => {
    const r = await rpc(node.url, gamma, "SendMessage", { message: userMessage("still there?") });
    expect(r.status).toBe(200);
    expect(r.body.result.task.status.state).toBe("TASK_STATE_COMPLETED");
    expect(r.body.result.task.artifacts[0].parts[0].text).toBe("still there?");
    expect(exitCode).toBeUndefined();
  });
});
