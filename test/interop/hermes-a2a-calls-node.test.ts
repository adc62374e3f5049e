/**
 * A mixed fleet, the other way: Hermes's own A2A client (the twin of plugins/platforms/a2a/tools.py,
 * test/fakes/hermes-a2a, driven as Hermes's model drives it: a2a_discover, a2a_call) calls the compiled
 * a2a-node's token listener with a token from `a2a-node tokens add hermes`, trusting the fleet CA. The node
 * runs its tasks on a Hermes runs API (the runs-API twin), so answers stream in chunks and approvals ask
 * questions. Covered: discovery, streamed answers, a conversation kept by context, the client's fallback
 * from a broken stream to SendMessage with the same messageId (the task runs once), a question, refused
 * tokens, and push notifications of both kinds reaching one receiver.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createHmac } from "node:crypto";
import { writeFileSync } from "node:fs";
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { verifySignature } from "../../src/push/signature";
import { runBinary, serveBinary, type ServedBinary } from "../helpers/binary";
import { hermes as step, startFakeHermes, type FakeHermes } from "../fakes/hermes/server";
import { makeFleet, type Fleet } from "../helpers/fleet";
import { HermesA2AClient, pyDumps, startHermesA2AServer } from "../fakes/hermes-a2a";

const API_KEY = `runs-${crypto.randomUUID()}`;
const DEPLOY = {
  command: "kubectl set image deploy/web web=web:1.4.2",
  description: "deploy build 1.4.2 to production",
};

let fleet: Fleet;
let runs: FakeHermes;
let node: ServedBinary;
let tokenUrl: string;
let ca: string;
let token: string;
let receiver: Receiver;

/**
 * Hermes's client with config.yaml `a2a_agents: {alpha: {url, auth: {type: bearer, token}}}`, trusting the fleet CA.
 */
const hermesClient = (opts: { url?: string; token?: string; timeout?: number } = {}) =>
  new HermesA2AClient({
    ca,
    agents: {
      alpha: {
        url: opts.url ?? tokenUrl,
        auth: { type: "bearer", token: opts.token ?? token },
        timeout: opts.timeout ?? 20,
      },
    },
  });

/** A JSON-RPC call to the token listener as the `hermes` token caller (to look at what Hermes's client cannot). */
async function asHermes(method: string, params: unknown) {
  const res = await fetch(`${tokenUrl}/`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json", "a2a-version": "1.0" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
    tls: { ca },
  } as RequestInit);
  return (await res.json()) as { result?: any; error?: { code: number; message: string } };
}

interface Receiver {
  server: Server;
  url: string;
  got: { headers: IncomingMessage["headers"]; body: string }[];
  next(): Promise<{ headers: IncomingMessage["headers"]; body: string }>;
}

async function startReceiver(): Promise<Receiver> {
  const got: Receiver["got"] = [];
  const waiters: ((g: Receiver["got"][number]) => void)[] = [];
  const server = createServer((req, res) => {
    let body = "";
    req.on("data", (c) => (body += c));
    req.on("end", () => {
      const g = { headers: req.headers, body };
      got.push(g);
      waiters.splice(0).forEach((w) => w(g));
      res.end();
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  let seen = 0;
  return {
    server,
    got,
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    next: () =>
      got.length > seen ? Promise.resolve(got[seen++]) : new Promise((r) => waiters.push((g) => (seen++, r(g)))),
  };
}

beforeAll(async () => {
  fleet = await makeFleet(["alpha"]);
  ca = fleet.identity("alpha").ca;
  runs = startFakeHermes({
    apiKey: API_KEY,
    script: (req) => {
      const text = String(req.userMessage);
      if (text.includes("deploy"))
        return [
          step.approval(DEPLOY, { deny: [step.delta("Not deployed."), step.completed()] }),
          step.delta("Deployed "),
          step.delta("1.4.2."),
          step.completed(),
        ];
      if (text.includes("slow"))
        return [step.gate("slow"), step.delta("Slow "), step.delta("but "), step.delta("done."), step.completed()];
      return [
        step.delta("Hello "),
        step.delta("from "),
        step.delta("the runs API: "),
        step.delta(text),
        step.completed(),
      ];
    },
  });
  const made = await runBinary(["--home", fleet.homes.alpha, "tokens", "add", "hermes"]);
  expect(made.code, made.stderr).toBe(0);
  token = made.stdout.trim();
  // Pushes to a receiver on this machine (a loopback webhook is refused unless allowed).
  writeFileSync(join(fleet.homes.alpha, "config.toml"), 'push_allow = ["127.0.0.1"]\n');
  node = await serveBinary(fleet.homes.alpha, ["--executor", "hermes", "--hermes-url", runs.url, "--token-port", "0"], {
    HERMES_API_KEY: API_KEY,
  });
  tokenUrl = (await node.waitForLine({ msg: /^token listener open/ })).url as string;
  receiver = await startReceiver();
});

afterAll(async () => {
  await node?.stop("SIGKILL").catch(() => undefined);
  await runs?.stop();
  await new Promise<void>((r) => (receiver ? receiver.server.close(() => r()) : r()));
  fleet?.cleanup();
});

describe("Hermes's A2A client calls a2a-node's token listener", () => {
  it("a2a_discover reads the card: JSON-RPC first, streaming; the v1.0 security requirement is not what it reads", async () => {
    const text = await hermesClient().a2aDiscover({ url: tokenUrl });
    expect(text).toContain("Agent: alpha");
    expect(text).toContain(`URL: ${tokenUrl}/`);
    expect(text).toContain("Protocol: JSONRPC v1.0, HTTP+JSON v1.0");
    // It reads v0.3's `security`; a2a-node declares v1.0's securityRequirements. The token is sent anyway.
    expect(text).toContain("Streaming: True  Push: True  Auth required: no");
  });

  it("a2a_call streams, and reads the streamed answer whole (not one line per chunk)", async () => {
    const client = hermesClient();
    const r = await client.a2aCall({ agent: "alpha", message: "greet the fleet" });
    expect(r.text).toBe(`[alpha · context ${r.contextId} · completed]\nHello from the runs API: greet the fleet`);
    expect(r.fellBack).toBe(false);
    const posts = client.exchanges.filter((e) => e.method === "POST");
    expect(posts.map((e) => e.body?.method)).toEqual(["SendStreamingMessage"]);
    // What came over the stream: each artifact once, whole, before the status that ends the task.
    const results = posts[0].frames!.map((f) => (f as { result: Record<string, any> }).result);
    const artifacts = results.filter((x) => x.artifactUpdate);
    expect(artifacts).toHaveLength(1);
    expect(artifacts[0].artifactUpdate.artifact.parts).toEqual([{ text: "Hello from the runs API: greet the fleet" }]);
    expect(results.at(-1)?.statusUpdate?.status.state).toBe("TASK_STATE_COMPLETED");
    // a2a-node took Hermes's own contextId and messageId; the caller is the token's name.
    const listed = await asHermes("ListTasks", { contextId: r.contextId });
    expect(listed.result.tasks).toHaveLength(1);
    const stored = (await asHermes("GetTask", { id: listed.result.tasks[0].id })).result;
    expect(stored.history[0].messageId).toBe(
      (posts[0].body as { params: { message: { messageId: string } } }).params.message.messageId,
    );
  });

  it("a conversation goes on by context_id: the second call is a new task of the same context, on the same Hermes session", async () => {
    const client = hermesClient();
    const first = await client.a2aCall({ agent: "alpha", message: "remember the number 7" });
    const before = runs.runs.length;
    const second = await client.a2aCall({ agent: "alpha", message: "which number?", context_id: first.contextId });
    expect(second.contextId).toBe(first.contextId);
    expect(second.state).toBe("TASK_STATE_COMPLETED");
    const tasks = (await asHermes("ListTasks", { contextId: first.contextId })).result.tasks;
    expect(tasks).toHaveLength(2);
    const [a, b] = [runs.runs[before - 1], runs.runs[before]];
    expect(b.request.userMessage).toBe("which number?");
    expect(b.request.sessionId).toBe(a.request.sessionId);
  });

  it("a stream broken on the way falls back to SendMessage with the same messageId: the task runs once and the answer arrives", async () => {
    const proxy = await startBreakingProxy(tokenUrl, ca);
    try {
      const client = hermesClient({ url: proxy.url });
      const before = runs.runs.length;
      const call = client.a2aCall({ agent: "alpha", message: "a slow job" });
      await runs.gateReached("slow");
      await proxy.fallbackArrived;
      runs.release("slow");
      const r = await call;
      expect(r.fellBack).toBe(true);
      expect(r.text).toBe(`[alpha · context ${r.contextId} · completed]\nSlow but done.`);
      const posts = client.exchanges.filter((e) => e.method === "POST");
      expect(posts.map((e) => e.body?.method)).toEqual(["SendStreamingMessage", "SendMessage"]);
      expect(posts[1].body?.id).toBe(posts[0].body?.id);
      expect((posts[1].body as any).params.message).toEqual((posts[0].body as any).params.message);
      expect(runs.runs.length - before).toBe(1);
      expect((await asHermes("ListTasks", { contextId: r.contextId })).result.tasks).toHaveLength(1);
    } finally {
      await proxy.close();
    }
  });

  it("a question ends the stream INPUT_REQUIRED; the fallback SendMessage returns the waiting task at once, and a2a_call shows the question", async () => {
    const client = hermesClient({ timeout: 15 });
    const before = runs.runs.length;
    const r = await client.a2aCall({ agent: "alpha", message: "deploy 1.4.2" });
    expect(r.fellBack).toBe(true);
    expect(r.state).toBe("TASK_STATE_INPUT_REQUIRED");
    expect(r.text).toContain(
      `[alpha · context ${r.contextId} · input-required]\nHermes asks for approval before it goes on.\nWhy: ${DEPLOY.description}`,
    );
    expect(r.text).toContain(
      `(The peer needs more input — answer by calling a2a_call again with context_id '${r.contextId}'.)`,
    );
    expect(runs.runs.length - before).toBe(1);
    // What differs: the client answers by context, without the task id, so the answer is a new task; the
    // question waits on (until Hermes's approval timeout denies it).
    const answer = await client.a2aCall({ agent: "alpha", message: "yes", context_id: r.contextId });
    expect(answer.contextId).toBe(r.contextId);
    const tasks = (await asHermes("ListTasks", { contextId: r.contextId })).result.tasks as {
      status: { state: string };
    }[];
    expect(tasks.map((t) => t.status.state).sort()).toEqual(["TASK_STATE_COMPLETED", "TASK_STATE_INPUT_REQUIRED"]);
  });

  it("a token the node does not know, or one revoked, is refused: a2a_call says so", async () => {
    expect((await hermesClient({ token: "a2a_not-a-token" }).a2aCall({ agent: "alpha", message: "hi" })).text).toBe(
      "Error: peer 'alpha' rejected auth (HTTP 401). Check the configured token.",
    );
    const made = await runBinary(["--home", fleet.homes.alpha, "tokens", "add", "short-lived"]);
    const shortLived = made.stdout.trim();
    expect((await hermesClient({ token: shortLived }).a2aCall({ agent: "alpha", message: "hi" })).state).toBe(
      "TASK_STATE_COMPLETED",
    );
    expect((await runBinary(["--home", fleet.homes.alpha, "tokens", "revoke", "short-lived"])).code).toBe(0);
    expect((await hermesClient({ token: shortLived }).a2aCall({ agent: "alpha", message: "hi" })).text).toBe(
      "Error: peer 'alpha' rejected auth (HTTP 401). Check the configured token.",
    );
  });
});

describe("push notifications in a mixed fleet", () => {
  it("Hermes's client registers no webhook (nothing to sign for it)", async () => {
    const client = hermesClient();
    await client.a2aCall({ agent: "alpha", message: "no push" });
    for (const e of client.exchanges)
      expect(JSON.stringify(e.body ?? {})).not.toMatch(/pushNotification|configuration/);
  });

  it("one receiver verifies both: a2a-node's X-A2A-Signature (sha256=, timestamped, exact bytes) and Hermes's (hex over re-sorted JSON)", async () => {
    const secret = `shared-${crypto.randomUUID()}`;
    /** The README's recipe for a receiver of both kinds. */
    const verify = (headers: IncomingMessage["headers"], body: string): boolean => {
      const sig = String(headers["x-a2a-signature"] ?? "");
      if (sig.startsWith("sha256=")) return verifySignature(secret, headers["x-a2a-timestamp"] as string, body, sig);
      const expected = createHmac("sha256", secret)
        .update(pyDumps(JSON.parse(body), { sortKeys: true, ensureAscii: false }))
        .digest("hex");
      return sig === expected;
    };

    // a2a-node: the token of the push config is the key.
    const sent = await asHermes("SendMessage", {
      message: { messageId: crypto.randomUUID(), role: "ROLE_USER", parts: [{ text: "push when done" }] },
      configuration: { taskPushNotificationConfig: { url: receiver.url, token: secret } },
    });
    expect(sent.error).toBeUndefined();
    let fromNode = await receiver.next();
    while (
      !JSON.parse(fromNode.body).statusUpdate ||
      !["TASK_STATE_COMPLETED"].includes(JSON.parse(fromNode.body).statusUpdate.status.state)
    )
      fromNode = await receiver.next();
    expect(verify(fromNode.headers, fromNode.body)).toBe(true);
    expect(verify(fromNode.headers, fromNode.body.replace("TASK_STATE_COMPLETED", "TASK_STATE_FAILED"))).toBe(false);

    // A Hermes A2A node: A2A_PUSH_SECRET is the key (localhost-only here, so its SSRF guard lets loopback through).
    const hermesNode = await startHermesA2AServer({ port: 0, pushSecret: secret });
    try {
      const res = await fetch(`${hermesNode.url}/`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({
          jsonrpc: "2.0",
          id: 1,
          method: "SendMessage",
          params: {
            message: { role: "ROLE_USER", parts: [{ text: "push from hermes" }], messageId: "m" },
            configuration: { taskPushNotificationConfig: { url: receiver.url } },
          },
        }),
      });
      expect(res.status).toBe(200);
      const fromHermes = await receiver.next();
      expect(fromHermes.headers["x-a2a-signature"]).toMatch(/^[0-9a-f]{64}$/);
      expect(verify(fromHermes.headers, fromHermes.body)).toBe(true);
      // Checked as a2a-node's kind, Hermes's signature fails: the two schemes differ.
      expect(
        verifySignature(
          secret,
          fromHermes.headers["x-a2a-timestamp"] as string | undefined,
          fromHermes.body,
          fromHermes.headers["x-a2a-signature"] as string,
        ),
      ).toBe(false);
    } finally {
      await hermesNode.stop();
    }
  });
});

/**
 * A reverse proxy in front of the token listener (plain HTTP in, TLS to the node), as a proxy with an idle
 * timeout would sit there: the card's URLs are rewritten to its own, and the first SendStreamingMessage is
 * cut after its first chunk. `fallbackArrived` resolves when a SendMessage has reached the node.
 */
async function startBreakingProxy(upstream: string, trust: string) {
  let cut = false;
  let arrived!: () => void;
  const fallbackArrived = new Promise<void>((r) => (arrived = r));
  const server = createServer(async (req, res) => {
    let body = "";
    for await (const c of req) body += c;
    const headers: Record<string, string> = {};
    for (const h of ["authorization", "content-type", "accept", "a2a-version", "user-agent"])
      if (req.headers[h]) headers[h] = String(req.headers[h]);
    const rpc = req.method === "POST" ? (JSON.parse(body) as { method: string }).method : undefined;
    // Told before the request goes on: a blocking SendMessage is answered only when the task ends.
    if (rpc === "SendMessage") arrived();
    const abort = new AbortController();
    let up: Response;
    try {
      // A connection of its own for each request: the cut one must not be reused.
      up = await fetch(`${upstream}${req.url}`, {
        method: req.method,
        headers,
        body: req.method === "POST" ? body : undefined,
        tls: { ca: trust },
        signal: abort.signal,
        keepalive: false,
      } as RequestInit);
    } catch (err) {
      res.writeHead(502).end(String(err));
      return;
    }
    if (req.url?.startsWith("/.well-known/")) {
      const text = (await up.text()).replaceAll(upstream, self);
      res.writeHead(up.status, { "content-type": "application/json" }).end(text);
      return;
    }
    res.writeHead(up.status, { "content-type": up.headers.get("content-type") ?? "application/json" });
    const reader = up.body!.getReader();
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      res.write(value);
      if (rpc === "SendStreamingMessage" && !cut) {
        cut = true;
        abort.abort();
        res.destroy();
        return;
      }
    }
    res.end();
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  const self = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url: self,
    fallbackArrived,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}
