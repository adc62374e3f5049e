/**
 * The extended agent card and A2A extensions, through both bindings, against in-process nodes (real mTLS on
 * loopback, real SQLite). The executor is a recorder, so a test sees which extensions reached it.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startNode, type RunningNode } from "../../src/node";
import { DEFAULTS, type ServeConfig } from "../../src/config";
import { createLogger } from "../../src/log";
import type { AgentExecutor, ExecutionRequest } from "../../src/executors/executor";
import { httpJsonDriver, jsonRpcDriver, type BindingDriver, type BindingName } from "../helpers/bindings";
import { makeFleet, type Fleet, type TlsIdentity } from "../helpers/fleet";
import { get, userMessage } from "../helpers/rpc";
import { openSse, openSseRequest } from "../helpers/sse";
import { runCli } from "../../src/cli/registry";
import { bufferIo } from "../../src/cli/io";

const OPTIONAL = "https://example.com/ext/citations/v1";
const REQUIRED = "urn:example:signed-messages:v2";
const UNKNOWN = "https://example.com/ext/never-declared/v1";

let fleet: Fleet;
let alpha: TlsIdentity;
let beta: RunningNode;
let gamma: RunningNode;
let delta: RunningNode;
const seen: ExecutionRequest[] = [];
const quiet = createLogger(() => {}, "warn");

/** Completes every task at once, keeping what it was given. */
const recorder: AgentExecutor = {
  kind: "echo",
  async execute(req) {
    seen.push(req);
    return {
      state: "TASK_STATE_COMPLETED",
      artifacts: [{ artifactId: "a", parts: [{ text: `extensions: ${(req.extensions ?? []).join(" ")}` }] }],
    };
  },
};

const base: ServeConfig = { ...DEFAULTS, host: "127.0.0.1", port: 0 };

beforeAll(async () => {
  fleet = await makeFleet(["alpha", "beta", "gamma", "delta"]);
  alpha = fleet.identity("alpha");
  beta = await startNode(
    fleet.homes.beta,
    {
      ...base,
      executor: "echo",
      plainHttpPort: 0,
      extendedCard: {
        description: "beta, as the fleet sees it",
        skills: [
          {
            id: "fleet-ops",
            name: "Fleet operations",
            description: "Runs the fleet's maintenance chores.",
            tags: ["ops"],
          },
        ],
      },
      extensions: [
        { uri: OPTIONAL, description: "cites its sources" },
        { uri: REQUIRED, description: "every message is signed", required: true, params: { alg: "Ed25519" } },
      ],
    },
    quiet,
    { executor: recorder },
  );
  gamma = await startNode(fleet.homes.gamma, { ...base, executor: "echo" }, quiet);
  // The same extensions behind a card that prefers HTTP+JSON, for the CLI's other client.
  delta = await startNode(
    fleet.homes.delta,
    {
      ...base,
      executor: "echo",
      preferredBinding: "HTTP+JSON",
      extensions: [{ uri: OPTIONAL }, { uri: REQUIRED, required: true }],
    },
    quiet,
    { executor: recorder },
  );
  for (const [name, url] of [
    ["beta", beta.url],
    ["delta", delta.url],
  ])
    expect((await cli("peers", "add", name, url)).code).toBe(0);
});

async function cli(...args: string[]) {
  const io = bufferIo({});
  const code = await runCli(["--home", fleet.homes.alpha, ...args], io);
  return { code, out: io.out(), err: io.err() };
}

afterAll(async () => {
  await beta?.stop();
  await gamma?.stop();
  await delta?.stop();
  fleet?.cleanup();
});

const BINDINGS: BindingName[] = ["JSONRPC", "HTTP+JSON"];
const driver = (name: BindingName, url: string): BindingDriver =>
  name === "JSONRPC" ? jsonRpcDriver(url) : httpJsonDriver(url);
const v1 = (extensions?: string) => ({
  "a2a-version": "1.0",
  ...(extensions === undefined ? {} : { "a2a-extensions": extensions }),
});

describe("the public card", () => {
  it("says the extended card exists and declares the extensions, with their required flag and params; fleet-only skills stay out", async () => {
    const card = (await get(`${beta.url}/.well-known/agent-card.json`, alpha)).body;
    expect(card.capabilities.extendedAgentCard).toBe(true);
    expect(card.capabilities.extensions).toEqual([
      { uri: OPTIONAL, description: "cites its sources" },
      { uri: REQUIRED, description: "every message is signed", required: true, params: { alg: "Ed25519" } },
    ]);
    expect(card.skills.map((s: { id: string }) => s.id)).toEqual(["delegate"]);
    expect(card.description).not.toBe("beta, as the fleet sees it");
  });

  it("of a node with neither says extendedAgentCard false and declares no extensions", async () => {
    const card = (await get(`${gamma.url}/.well-known/agent-card.json`, alpha)).body;
    expect(card.capabilities.extendedAgentCard).toBe(false);
    expect(card.capabilities.extensions).toBeUndefined();
  });

  it("on the plain loopback listener says extendedAgentCard false: its callers have no identity to be shown more", async () => {
    const card = (await get(`${beta.plainUrl}/.well-known/agent-card.json`, undefined)).body;
    expect(card.capabilities.extendedAgentCard).toBe(false);
    expect(card.capabilities.extensions.map((e: { uri: string }) => e.uri)).toEqual([OPTIONAL, REQUIRED]);
  });
});

describe.each(BINDINGS)("%s binding", (name) => {
  it("GetExtendedAgentCard gives a fleet member the public card with the extended description and skills", async () => {
    const b = driver(name, beta.url);
    const o = await b.call(alpha, "GetExtendedAgentCard", {});
    expect(o.ok, o.reply.text).toBe(true);
    const card = o.result;
    const pub = (await get(`${beta.url}/.well-known/agent-card.json`, alpha)).body;
    expect(card.description).toBe("beta, as the fleet sees it");
    expect(card.skills.map((s: { id: string }) => s.id)).toEqual(["delegate", "fleet-ops"]);
    expect(card.capabilities).toEqual(pub.capabilities);
    expect(card.supportedInterfaces).toEqual(pub.supportedInterfaces);
    expect(card.securitySchemes).toEqual(pub.securitySchemes);
  });

  it("GetExtendedAgentCard of a node without one is UnsupportedOperation (its card says false), as the spec requires", async () => {
    const o = await driver(name, gamma.url).call(alpha, "GetExtendedAgentCard", {});
    expect(o.ok).toBe(false);
    expect(o.reason).toBe("UNSUPPORTED_OPERATION");
    expect(o.code).toBe(name === "JSONRPC" ? -32004 : 400);
    expect(o.message).toContain("no extended agent card");
  });

  it("GetExtendedAgentCard over the plain loopback listener is refused, naming mutual TLS", async () => {
    const path = name === "JSONRPC" ? "/" : "/extendedAgentCard";
    const res = await fetch(`${beta.plainUrl}${path}`, {
      method: name === "JSONRPC" ? "POST" : "GET",
      headers: { "a2a-version": "1.0", "content-type": "application/json" },
      body:
        name === "JSONRPC"
          ? JSON.stringify({ jsonrpc: "2.0", id: 1, method: "GetExtendedAgentCard", params: {} })
          : undefined,
    });
    const body = (await res.json()) as any;
    if (name === "JSONRPC")
      expect([res.status, body.error.code, body.error.data[0].reason]).toEqual([200, -32004, "UNSUPPORTED_OPERATION"]);
    else
      expect([res.status, body.error.status, body.error.details[0].reason]).toEqual([
        400,
        "FAILED_PRECONDITION",
        "UNSUPPORTED_OPERATION",
      ]);
    expect(JSON.stringify(body)).toContain("mutual TLS");
  });

  it("a message that does not request the required extension is refused: -32008 / HTTP 400 FAILED_PRECONDITION, naming it", async () => {
    const b = driver(name, beta.url);
    const before = seen.length;
    for (const header of [undefined, OPTIONAL, `${OPTIONAL}, ${UNKNOWN}`]) {
      const o = await b.call(alpha, "SendMessage", { message: userMessage("hi") }, v1(header));
      expect(o.ok).toBe(false);
      expect(o.reason).toBe("EXTENSION_SUPPORT_REQUIRED");
      expect(o.code).toBe(name === "JSONRPC" ? -32008 : 400);
      expect(o.message).toContain(REQUIRED);
      if (name === "HTTP+JSON") expect(o.reply.body.error.status).toBe("FAILED_PRECONDITION");
      else expect(o.reply.body.error.data[0].metadata).toEqual({ extensions: REQUIRED });
      expect(o.reply.headers.get("a2a-extensions")).toBeNull();
    }
    // Nothing was taken: no task, no execution.
    expect(seen.length).toBe(before);
  });

  it("the requested extensions the card declares are activated: echoed in A2A-Extensions and handed to the executor; unknown ones are ignored", async () => {
    const b = driver(name, beta.url);
    const o = await b.call(
      alpha,
      "SendMessage",
      { message: userMessage(`cite ${name}`) },
      v1(`${UNKNOWN},${REQUIRED} , ${OPTIONAL}`),
    );
    expect(o.ok, o.reply.text).toBe(true);
    expect(o.reply.headers.get("a2a-extensions")).toBe(`${OPTIONAL},${REQUIRED}`);
    const task = o.result.task;
    expect(task.status.state).toBe("TASK_STATE_COMPLETED");
    const req = seen.find((r) => r.taskId === task.id)!;
    expect(req.extensions).toEqual([OPTIONAL, REQUIRED]);
    // Kept with the task, for an execution resumed after a restart.
    expect(task.metadata["a2a-node/extensions"]).toEqual([OPTIONAL, REQUIRED]);
  });

  it("a streaming message is checked and echoed alike", async () => {
    const url = name === "JSONRPC" ? `${beta.url}/` : `${beta.url}/message:stream`;
    const open = (extensions?: string) =>
      name === "JSONRPC"
        ? openSse(
            url,
            alpha,
            "SendStreamingMessage",
            { message: userMessage("stream") },
            extensions ? { "a2a-extensions": extensions } : {},
          )
        : openSseRequest(url, alpha, {
            method: "POST",
            headers: { "content-type": "application/a2a+json", accept: "text/event-stream", ...v1(extensions) },
            body: JSON.stringify({ message: userMessage("stream") }),
          });
    const refused = await open();
    expect(refused.text).toContain("EXTENSION_SUPPORT_REQUIRED");
    const s = await open(REQUIRED);
    expect(s.headers.get("a2a-extensions")).toBe(REQUIRED);
    const events = await s.rest();
    expect(events.length).toBeGreaterThan(1);
  });

  it("operations other than messages are neither refused nor echoed (extensions act on what the executor runs)", async () => {
    const b = driver(name, beta.url);
    const sent = await b.call(alpha, "SendMessage", { message: userMessage("x") }, v1(REQUIRED));
    const id = sent.result.task.id;
    for (const header of [undefined, REQUIRED]) {
      const o = await b.call(alpha, "GetTask", { id }, v1(header));
      expect(o.ok, o.reply.text).toBe(true);
      expect(o.reply.headers.get("a2a-extensions")).toBeNull();
    }
  });

  it("a message refused after its extensions were read (an unknown task) echoes none", async () => {
    const o = await driver(name, beta.url).call(
      alpha,
      "SendMessage",
      { message: userMessage("x", { taskId: "no-such-task" }) },
      v1(REQUIRED),
    );
    expect(o.reason).toBe("TASK_NOT_FOUND");
    expect(o.reply.headers.get("a2a-extensions")).toBeNull();
  });

  it("a node that declares no extensions ignores requested ones and echoes none", async () => {
    const o = await driver(name, gamma.url).call(alpha, "SendMessage", { message: userMessage("plain") }, v1(OPTIONAL));
    expect(o.ok, o.reply.text).toBe(true);
    expect(o.reply.headers.get("a2a-extensions")).toBeNull();
  });
});

describe.each([
  ["beta", "JSON-RPC"],
  ["delta", "HTTP+JSON"],
])("send --extension to %s (%s)", (peer) => {
  it("without the required extension: refused, exit 1, naming the flag that requests it (--stream too)", async () => {
    for (const mode of [[], ["--stream"]]) {
      const r = await cli("send", "--agent", peer, "--task", "hi", "--extension", OPTIONAL, ...mode);
      expect(r.code).toBe(1);
      expect(r.err).toContain(`peer '${peer}' refused the message: this agent requires the A2A extension ${REQUIRED}`);
      expect(r.err).toContain(`send again with --extension ${REQUIRED}`);
    }
  });

  it("requests the extensions in A2A-Extensions; the executor gets the declared ones; one the peer did not activate is named on stderr", async () => {
    const r = await cli(
      "send",
      "--agent",
      peer,
      "--task",
      "cite",
      "--extension",
      REQUIRED,
      "--extension",
      UNKNOWN,
      "--extension",
      REQUIRED,
      "--wait",
    );
    expect(r.code, r.err).toBe(0);
    expect(r.out).toBe(`extensions: ${REQUIRED}\n`);
    expect(r.err).toContain(
      `peer '${peer}' did not activate extension ${UNKNOWN} (its card lists the ones it supports under capabilities.extensions)`,
    );
    const json = await cli(
      "send",
      "--agent",
      peer,
      "--task",
      "cite",
      "--extension",
      REQUIRED,
      "--extension",
      OPTIONAL,
      "--wait",
      "--json",
    );
    expect(json.code).toBe(0);
    expect(JSON.parse(json.out).artifacts[0].parts[0].text).toBe(`extensions: ${OPTIONAL} ${REQUIRED}`);
    expect(json.err).toBe("");
  });
});

describe("send --extension", () => {
  it.each(["has space", "a,b", "no-scheme"])("refuses '%s' as a usage error", async (uri) => {
    const r = await cli("send", "--agent", "beta", "--task", "x", "--extension", uri);
    expect(r.code).toBe(2);
    expect(r.err).toContain(`--extension '${uri}' is not an extension URI`);
  });
});

describe("buildExtendedCard", () => {
  it("adds the skills after the public ones, takes the description, and drops a signature of the public card", async () => {
    const { buildAgentCard, buildExtendedCard } = await import("../../src/server/agent-card");
    const pub = buildAgentCard({
      name: "n",
      description: "public",
      version: "1",
      advertisedUrl: "https://n:9443",
      skills: [{ id: "a", name: "A", description: "a", tags: [] }],
    });
    const signed = { ...pub, signatures: [{ protected: "x", signature: "y" }] };
    const ext = buildExtendedCard(signed, {
      skills: [{ id: "b", name: "B", description: "b", tags: [] }],
    }) as unknown as Record<string, unknown>;
    expect(ext.signatures).toBeUndefined();
    expect(ext.description).toBe("public");
    expect((ext.skills as { id: string }[]).map((s) => s.id)).toEqual(["a", "b"]);
    expect((ext.capabilities as Record<string, unknown>).extendedAgentCard).toBe(true);
  });
});
