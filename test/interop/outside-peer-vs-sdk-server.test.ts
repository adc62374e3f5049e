/**
 * A peer outside the fleet: the official @a2a-js/sdk server (DefaultRequestHandler, its express JSON-RPC, REST
 * and agent-card handlers) behind a bearer-token check, knowing nothing of our PKI. The terminal client reaches
 * it with `peers add NAME URL --auth bearer --token-file F` over plain HTTP on loopback, and over TLS with a
 * certificate from a CA of its own (made by our PKI code) given with --ca; through both bindings. The token is
 * looked for in everything the CLI printed, and must be nowhere.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { chmodSync, readFileSync, unlinkSync, writeFileSync } from "node:fs";
import { createServer as createHttpServer, type Server } from "node:http";
import { createServer as createHttpsServer } from "node:https";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import express from "express";
import { AGENT_CARD_PATH, TaskState, type AgentCard } from "@a2a-js/sdk";
import {
  AgentEvent,
  DefaultRequestHandler,
  InMemoryTaskStore,
  type AgentExecutor,
  type ExecutionEventBus,
  type RequestContext,
} from "@a2a-js/sdk/server";
import { agentCardHandler, jsonRpcHandler, restHandler, UserBuilder } from "@a2a-js/sdk/server/express";
import { createCa, issueLeaf } from "../../pki";
import { bufferIo } from "../../src/cli/io";
import { runCli } from "../../src/cli/registry";
import { makeFleet, type Fleet } from "../helpers/fleet";
import { tempDir } from "../helpers/temp-dir";

const TOKEN = `tok-${crypto.randomUUID()}`;
const API_KEY = `key-${crypto.randomUUID()}`;

/** Echoes at once; a message containing "[hold]" stays WORKING until it is canceled. */
class Executor implements AgentExecutor {
  private readonly held = new Map<string, { contextId: string }>();

  async execute(ctx: RequestContext, bus: ExecutionEventBus): Promise<void> {
    const { taskId, contextId, userMessage } = ctx;
    const part = userMessage.parts[0]?.content;
    const text = part?.$case === "text" ? part.value : "";
    const status = (state: TaskState) => ({ state, message: undefined, timestamp: new Date().toISOString() });
    bus.publish(
      AgentEvent.task({
        id: taskId,
        contextId,
        status: status(TaskState.TASK_STATE_SUBMITTED),
        artifacts: [],
        history: [{ ...userMessage, taskId, contextId }],
        metadata: undefined,
      }),
    );
    if (text.includes("[hold]")) {
      this.held.set(taskId, { contextId });
      bus.publish(
        AgentEvent.statusUpdate({
          taskId,
          contextId,
          status: status(TaskState.TASK_STATE_WORKING),
          metadata: undefined,
        }),
      );
      return;
    }
    bus.publish(
      AgentEvent.artifactUpdate({
        taskId,
        contextId,
        artifact: {
          artifactId: `${taskId}-echo`,
          name: "echo",
          description: "",
          parts: [
            {
              content: { $case: "text", value: `sdk echo: ${text}` },
              metadata: undefined,
              filename: "",
              mediaType: "",
            },
          ],
          metadata: undefined,
          extensions: [],
        },
        append: false,
        lastChunk: true,
        metadata: undefined,
      }),
    );
    bus.publish(
      AgentEvent.statusUpdate({
        taskId,
        contextId,
        status: status(TaskState.TASK_STATE_COMPLETED),
        metadata: undefined,
      }),
    );
    bus.finished();
  }

  async cancelTask(taskId: string, bus: ExecutionEventBus): Promise<void> {
    const held = this.held.get(taskId);
    if (!held) return;
    this.held.delete(taskId);
    bus.publish(
      AgentEvent.statusUpdate({
        taskId,
        contextId: held.contextId,
        status: { state: TaskState.TASK_STATE_CANCELED, message: undefined, timestamp: new Date().toISOString() },
        metadata: undefined,
      }),
    );
    bus.finished();
  }
}

interface Agent {
  server: Server;
  base: string;
  card: AgentCard;
  /** The credentials of every request that reached it: its path and what it carried. */
  seen: { path: string; authorization?: string; apiKey?: string }[];
}

/** The SDK's server behind a check that takes `Authorization: Bearer TOKEN` or `X-Api-Key: API_KEY`, card included. */
async function startAgent(tls?: { cert: string; key: string }): Promise<Agent> {
  const card: AgentCard = {
    name: "sdk-outside",
    description: "@a2a-js/sdk agent outside the fleet",
    version: "1.0.0",
    supportedInterfaces: [],
    provider: undefined,
    capabilities: { streaming: true, pushNotifications: false, extensions: [], extendedAgentCard: false },
    securitySchemes: {
      bearer: {
        scheme: {
          $case: "httpAuthSecurityScheme",
          value: { description: "bearer token", scheme: "Bearer", bearerFormat: "" },
        },
      },
    },
    securityRequirements: [{ schemes: { bearer: { list: [] } } }],
    defaultInputModes: ["text/plain"],
    defaultOutputModes: ["text/plain"],
    skills: [
      {
        id: "echo",
        name: "Echo",
        description: "Echoes.",
        tags: [],
        examples: [],
        inputModes: [],
        outputModes: [],
        securityRequirements: [],
      },
    ],
    signatures: [],
  };
  const handler = new DefaultRequestHandler(card, new InMemoryTaskStore(), new Executor());
  const seen: Agent["seen"] = [];
  const app = express();
  app.use((req, res, next) => {
    const authorization = req.headers.authorization;
    const apiKey = req.headers["x-api-key"] as string | undefined;
    seen.push({ path: req.originalUrl, authorization, apiKey });
    if (authorization === `Bearer ${TOKEN}` || apiKey === API_KEY) return next();
    res.status(401).set("WWW-Authenticate", 'Bearer realm="sdk"').json({ error: "unauthorized" });
  });
  app.use(`/${AGENT_CARD_PATH}`, agentCardHandler({ agentCardProvider: handler }));
  app.use("/rest", restHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication }));
  app.use("/", jsonRpcHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication }));
  const server = tls ? createHttpsServer({ cert: tls.cert, key: tls.key }, app) : createHttpServer(app);
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => resolve());
  });
  const base = `${tls ? "https" : "http"}://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { server, base, card, seen };
}

/** Puts the binding the test wants first in the card: the client speaks the first one it knows. */
function prefer(agent: Agent, binding: "JSONRPC" | "HTTP+JSON"): void {
  const rest = { url: `${agent.base}/rest`, protocolBinding: "HTTP+JSON", protocolVersion: "1.0", tenant: "" };
  const rpc = { url: `${agent.base}/`, protocolBinding: "JSONRPC", protocolVersion: "1.0", tenant: "" };
  agent.card.supportedInterfaces.splice(0, Infinity, ...(binding === "JSONRPC" ? [rpc, rest] : [rest, rpc]));
}

let fleet: Fleet;
let dir: string;
let tokenFile: string;
let caFile: string;
let plain: Agent;
let secure: Agent;
/** Everything the CLI printed in this file's tests, searched for the secrets at the end. */
const printed: string[] = [];

async function cli(...args: string[]) {
  const io = bufferIo();
  const code = await runCli(["--home", fleet.homes.alpha, ...args], io);
  printed.push(io.out(), io.err());
  return { code, out: io.out(), err: io.err() };
}

beforeAll(async () => {
  fleet = await makeFleet(["alpha"]);
  dir = tempDir("a2a-outside-");
  tokenFile = join(dir, "agent.token");
  writeFileSync(tokenFile, `${TOKEN}\n`, { mode: 0o600 });
  const ca = await createCa({ name: "agent own CA" });
  const leaf = await issueLeaf({ ca, name: "agent", sans: ["localhost", "127.0.0.1"] });
  caFile = join(dir, "agent-ca.pem");
  writeFileSync(caFile, ca.certPem);
  plain = await startAgent();
  secure = await startAgent({ cert: leaf.certPem, key: leaf.keyPem });
});

afterAll(async () => {
  for (const a of [plain, secure]) {
    a?.server.closeAllConnections();
    await new Promise<void>((resolve) => (a ? a.server.close(() => resolve()) : resolve()));
  }
  fleet?.cleanup();
});

const CASES = [
  { name: "plain HTTP on loopback", agent: () => plain, extra: (): string[] => [] },
  { name: "TLS, its CA given with --ca", agent: () => secure, extra: () => ["--ca", caFile] },
];
const BINDINGS = [{ binding: "JSONRPC" as const }, { binding: "HTTP+JSON" as const }];

describe.each(CASES)("an SDK agent with a bearer check, over $name", ({ agent, extra }) => {
  describe.each(BINDINGS)("speaking $binding", ({ binding }) => {
    const peer = `sdk-${binding === "JSONRPC" ? "rpc" : "rest"}-${extra().length ? "tls" : "http"}`;
    beforeAll(async () => {
      prefer(agent(), binding);
      const added = await cli(
        "peers",
        "add",
        peer,
        agent().base,
        "--auth",
        "bearer",
        "--token-file",
        tokenFile,
        ...extra(),
        "--json",
      );
      expect(added.code, added.err).toBe(0);
      expect(JSON.parse(added.out)).toMatchObject({
        name: peer,
        url: agent().base,
        auth: { kind: "bearer", file: tokenFile },
      });
    });

    it("send --wait, status and tasks work, every request (the card's too) carrying the token", async () => {
      const from = agent().seen.length;
      const text = `hello ${crypto.randomUUID()}`;
      const sent = await cli("send", "--agent", peer, "--task", text, "--wait", "--json");
      expect(sent.code, sent.err).toBe(0);
      const task = JSON.parse(sent.out);
      expect(task).toMatchObject({
        status: { state: "TASK_STATE_COMPLETED" },
        artifacts: [{ parts: [{ text: `sdk echo: ${text}` }] }],
      });
      const status = await cli("status", "--agent", peer, "--task-id", task.id, "--json");
      expect(status.code, status.err).toBe(0);
      expect(JSON.parse(status.out).id).toBe(task.id);
      const listed = await cli("tasks", "list", "--agent", peer, "--json");
      expect(listed.code, listed.err).toBe(0);
      expect(listed.out).toContain(task.id);
      const requests = agent().seen.slice(from);
      expect(requests.some((r) => r.path.includes("agent-card.json"))).toBe(true);
      expect(requests.some((r) => (binding === "JSONRPC" ? r.path === "/" : r.path.startsWith("/rest/")))).toBe(true);
      for (const r of requests) expect(r.authorization, r.path).toBe(`Bearer ${TOKEN}`);
    });

    it("cancel stops a running task there", async () => {
      const sent = await cli("send", "--agent", peer, "--task", "wait for me [hold]", "--json");
      expect(sent.code, sent.err).toBe(0);
      const id = JSON.parse(sent.out).id;
      const canceled = await cli("cancel", "--agent", peer, "--task-id", id);
      expect(canceled.code, canceled.err).toBe(0);
      const status = await cli("status", "--agent", peer, "--task-id", id, "--json");
      expect(JSON.parse(status.out).status.state).toBe("TASK_STATE_CANCELED");
    });
  });

  it("a token the agent refuses: exit 8, naming the file and the next step, never the token", async () => {
    const peer = `wrong-${extra().length ? "tls" : "http"}`;
    const wrongFile = join(dir, `${peer}.token`);
    writeFileSync(wrongFile, "not-the-token\n", { mode: 0o600 });
    expect((await cli("peers", "add", peer, agent().base, "--token-file", wrongFile, ...extra())).code).toBe(0);
    const r = await cli("send", "--agent", peer, "--task", "hi");
    expect(r.code).toBe(8);
    expect(r.err).toContain(`refused the token in ${wrongFile} (answered HTTP 401 (it asks for Bearer))`);
    expect(r.err).toContain(`next: check that ${wrongFile} holds what the agent expects`);
    expect(r.err).not.toContain("not-the-token");
    // The file is read at every call: fixing it is enough, no re-add.
    writeFileSync(wrongFile, `${TOKEN}\n`);
    const fixed = await cli("send", "--agent", peer, "--task", "now right", "--wait", "--json");
    expect(fixed.code, fixed.err).toBe(0);
  });
});

describe("outside peers: the other credentials, trust and mistakes", () => {
  it("--header-file sends its one header instead of a bearer token", async () => {
    const headerFile = join(dir, "agent.header");
    writeFileSync(headerFile, `X-Api-Key: ${API_KEY}\n`, { mode: 0o600 });
    prefer(plain, "HTTP+JSON");
    expect((await cli("peers", "add", "keyed", plain.base, "--header-file", headerFile)).code).toBe(0);
    const from = plain.seen.length;
    const r = await cli("send", "--agent", "keyed", "--task", "with a key", "--wait", "--json");
    expect(r.code, r.err).toBe(0);
    for (const s of plain.seen.slice(from)) expect(s).toMatchObject({ apiKey: API_KEY, authorization: undefined });
  });

  it("a missing token file: exit 2, saying which file and what to do", async () => {
    const gone = join(dir, "gone.token");
    writeFileSync(gone, TOKEN, { mode: 0o600 });
    expect((await cli("peers", "add", "gone", plain.base, "--token-file", gone)).code).toBe(0);
    unlinkSync(gone);
    const r = await cli("send", "--agent", "gone", "--task", "hi");
    expect(r.code).toBe(2);
    expect(r.err).toContain(`cannot read the token file ${gone}: it does not exist`);
    expect(r.err).toContain(`next: write the token to ${gone} (mode 0600)`);
    const add = await cli("peers", "add", "never", plain.base, "--token-file", join(dir, "never.token"));
    expect(add.code).toBe(2);
    expect(add.err).toContain("cannot read the token file");
  });

  it("without --ca, the agent's private CA is not trusted: exit 8, pointing at --ca", async () => {
    expect((await cli("peers", "add", "untrusted", secure.base, "--token-file", tokenFile)).code).toBe(0);
    const r = await cli("send", "--agent", "untrusted", "--task", "hi");
    expect(r.code, r.err).toBe(8);
    expect(r.err).toContain("this system's CA store does not vouch for");
    expect(r.err).toContain("--ca FILE");
  });

  it("an agent that is not running: exit 4, naming its URL", async () => {
    const probe = createHttpServer();
    await new Promise<void>((resolve) => probe.listen(0, "127.0.0.1", () => resolve()));
    const port = (probe.address() as AddressInfo).port;
    await new Promise<void>((resolve) => probe.close(() => resolve()));
    expect((await cli("peers", "add", "down", `http://127.0.0.1:${port}`, "--token-file", tokenFile)).code).toBe(0);
    const r = await cli("send", "--agent", "down", "--task", "hi");
    expect(r.code).toBe(4);
    expect(r.err).toContain(`cannot reach peer 'down' at http://127.0.0.1:${port}: connection refused`);
    expect(r.err).toContain("is the agent running");
  });

  it("an agent that wants a token from a peer added without one says how to add it", async () => {
    expect((await cli("peers", "add", "bare", plain.base, "--auth", "none")).code).toBe(0);
    const r = await cli("status", "--agent", "bare", "--task-id", "x");
    expect(r.code).toBe(8);
    expect(r.err).toContain("it wants credentials, and this peer has none");
    expect(r.err).toContain(`'a2a-node peers add bare ${plain.base} --auth bearer --token-file FILE --replace'`);
  });

  it("doctor reads each outside peer's card with its own trust and token", async () => {
    const r = await cli("doctor", "--json");
    const checks = JSON.parse(r.out).checks as { check: string; status: string; detail: string; fix?: string }[];
    const by = (name: string) => checks.find((c) => c.check === `peer ${name}`);
    expect(by("sdk-rpc-tls")).toMatchObject({
      status: "ok",
      detail: expect.stringContaining('answers (outside the fleet): card "sdk-outside"'),
    });
    expect(by("keyed")?.status).toBe("ok");
    expect(by("gone")).toMatchObject({ status: "fail", detail: expect.stringContaining("cannot read the token file") });
    expect(by("untrusted")).toMatchObject({ status: "fail", detail: expect.stringContaining("does not vouch for") });
  });

  it("peers list, show and their --json name the token's file, never the token; nor did anything printed", async () => {
    const list = await cli("peers", "list");
    expect(list.out).toMatch(/sdk-rpc-http\s+http:\/\/127\.0\.0\.1:\d+\s+outside, plain HTTP, bearer token from /);
    expect(list.out).toMatch(
      /sdk-rpc-tls\s+https:\/\/127\.0\.0\.1:\d+\s+outside, CA .*agent-ca\.pem, bearer token from /,
    );
    const show = await cli("peers", "show", "sdk-rpc-tls");
    expect(show.out).toContain(`credentials  Authorization: Bearer, token read from ${tokenFile} at every call`);
    expect(show.out).toContain(`server       verified against the CA in ${caFile}`);
    const json = JSON.parse((await cli("peers", "show", "sdk-rpc-tls", "--json")).out);
    expect(json).toMatchObject({ trust: { kind: "ca", caFile }, auth: { kind: "bearer", file: tokenFile } });
    await cli("peers", "list", "--json");
    const db = readFileSync(join(fleet.homes.alpha, "a2a-node.db"));
    expect(db.includes(Buffer.from(TOKEN))).toBe(false);
    for (const text of printed) {
      expect(text).not.toContain(TOKEN);
      expect(text).not.toContain(API_KEY);
    }
  });

  it("refuses plain HTTP to another machine without --insecure-http, and mixing fleet and outside flags", async () => {
    const far = await cli("peers", "add", "far", "http://10.1.2.3:8080", "--token-file", tokenFile);
    expect(far.code).toBe(2);
    expect(far.err).toContain("plain HTTP to another machine");
    const allowed = await cli(
      "peers",
      "add",
      "far",
      "http://10.1.2.3:8080",
      "--token-file",
      tokenFile,
      "--insecure-http",
    );
    expect(allowed.code, allowed.err).toBe(0);
    expect(allowed.err).toContain("cross the network unencrypted");
    expect((await cli("peers", "add", "x", plain.base, "--token-file", tokenFile, "--pin")).code).toBe(2);
    expect((await cli("peers", "add", "x", plain.base, "--auth", "bearer")).err).toContain(
      "--auth bearer needs --token-file",
    );
    expect((await cli("peers", "add", "x", plain.base, "--auth", "basic", "--token-file", tokenFile)).err).toContain(
      "--auth must be bearer, header or none",
    );
    // A fleet peer keeps refusing http:// with the advice it always gave.
    const fleetPeer = await cli("peers", "add", "y", "http://127.0.0.1:9443");
    expect(fleetPeer.err).toContain("peers speak mutual TLS only");
    chmodSync(tokenFile, 0o644);
    const loose = await cli("peers", "add", "loose", plain.base, "--token-file", tokenFile);
    expect(loose.err).toContain(`warning: ${tokenFile} can be read by other users`);
    chmodSync(tokenFile, 0o600);
  });
});
