/**
 * Interop of A2A extensions, our side as the client: `a2a-node send --extension` against the official
 * @a2a-js/sdk 1.3.0 server (its DefaultRequestHandler refuses a message that does not request a required
 * extension; its executor activates the extensions it acts on, which the SDK echoes in A2A-Extensions), on
 * node:https with a client certificate from our fleet CA. The SDK's card lists HTTP+JSON first, then JSON-RPC;
 * the test runs against a card of each order.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createServer, type Server } from "node:https";
import type { AddressInfo } from "node:net";
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
import { bufferIo } from "../../src/cli/io";
import { runCli } from "../../src/cli/registry";
import { makeFleet, type Fleet } from "../helpers/fleet";

const REQUIRED = "https://example.com/ext/signed/v1";
const OPTIONAL = "https://example.com/ext/citations/v1";
const UNKNOWN = "https://example.com/ext/unknown/v1";

/**
 * Activates every requested extension its card declares (as an SDK executor that acts on them does), then answers with
 * them.
 */
class ExtensionsExecutor implements AgentExecutor {
  async execute(ctx: RequestContext, bus: ExecutionEventBus): Promise<void> {
    const requested = ctx.context?.requestedExtensions ?? [];
    for (const uri of requested) ctx.context?.addActivatedExtension(uri);
    const { taskId, contextId } = ctx;
    bus.publish(
      AgentEvent.task({
        id: taskId,
        contextId,
        status: { state: TaskState.TASK_STATE_COMPLETED, message: undefined, timestamp: new Date().toISOString() },
        artifacts: [
          {
            artifactId: "a",
            name: "extensions",
            description: "",
            parts: [
              {
                content: { $case: "text", value: `activated: ${requested.join(" ")}` },
                metadata: undefined,
                filename: "",
                mediaType: "",
              },
            ],
            metadata: undefined,
            extensions: [],
          },
        ],
        history: [],
        metadata: undefined,
      }),
    );
    bus.finished();
  }
  async cancelTask(): Promise<void> {}
}

let fleet: Fleet;
const servers: Server[] = [];

async function sdkPeer(restFirst: boolean): Promise<string> {
  const id = fleet.identity("sdkpeer");
  const card: AgentCard = {
    name: "sdk-ext",
    description: "@a2a-js/sdk agent with extensions",
    version: "1.0.0",
    supportedInterfaces: [],
    provider: undefined,
    capabilities: {
      streaming: true,
      pushNotifications: false,
      extensions: [
        { uri: REQUIRED, description: "signed", required: true, params: undefined },
        { uri: OPTIONAL, description: "citations", required: false, params: undefined },
      ],
      extendedAgentCard: false,
    },
    securitySchemes: {
      mtls: { scheme: { $case: "mtlsSecurityScheme", value: { description: "fleet CA client certificate" } } },
    },
    securityRequirements: [{ schemes: { mtls: { list: [] } } }],
    defaultInputModes: ["text/plain"],
    defaultOutputModes: ["text/plain"],
    skills: [],
    signatures: [],
  };
  const handler = new DefaultRequestHandler(card, new InMemoryTaskStore(), new ExtensionsExecutor());
  const app = express();
  app.use(`/${AGENT_CARD_PATH}`, agentCardHandler({ agentCardProvider: handler }));
  app.use("/rest", restHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication }));
  app.use("/", jsonRpcHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication }));
  const server = createServer(
    { cert: id.cert, key: id.key, ca: id.ca, requestCert: true, rejectUnauthorized: true },
    app,
  );
  servers.push(server);
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => resolve());
  });
  const base = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const rest = { url: `${base}/rest`, protocolBinding: "HTTP+JSON", protocolVersion: "1.0", tenant: "" };
  const rpc = { url: `${base}/`, protocolBinding: "JSONRPC", protocolVersion: "1.0", tenant: "" };
  card.supportedInterfaces.push(...(restFirst ? [rest, rpc] : [rpc, rest]));
  return base;
}

async function cli(...args: string[]) {
  // The SDK's server serves an unsigned card: a fleet peer's unsigned card is used only when accepted.
  const io = bufferIo({ A2A_NODE_UNSIGNED_CARDS: "accept" });
  const code = await runCli(["--home", fleet.homes.alpha, ...args], io);
  return { code, out: io.out(), err: io.err() };
}

beforeAll(async () => {
  fleet = await makeFleet(["alpha", "sdkpeer"]);
  expect((await cli("peers", "add", "sdkpeer", await sdkPeer(true))).code).toBe(0);
});

afterAll(async () => {
  for (const s of servers) {
    s.closeAllConnections();
    await new Promise<void>((resolve) => s.close(() => resolve()));
  }
  fleet?.cleanup();
});

describe("a2a-node send --extension against the SDK's server", () => {
  // A second SDK server whose card lists JSON-RPC first, reached by URL (one peer name, one URL).
  let rpcFirst: string;
  beforeAll(async () => {
    rpcFirst = await sdkPeer(false);
  });
  const targets = () => [
    ["HTTP+JSON", "sdkpeer", "peer 'sdkpeer'"],
    ["JSON-RPC", rpcFirst, rpcFirst],
  ];

  it("without the required extension: the SDK's -32008 (ExtensionSupportRequiredError), and the flag that requests it", async () => {
    for (const [, agent, label] of targets()) {
      const r = await cli("send", "--agent", agent, "--task", "hi", "--extension", OPTIONAL);
      expect(r.code, r.err).toBe(1);
      expect(r.err).toContain(`${label} refused the message`);
      expect(r.err).toContain(REQUIRED);
    }
  });

  it("with it: the SDK takes the message, its executor sees the extensions requested, and what it activated comes back", async () => {
    for (const [binding, agent, label] of targets()) {
      const r = await cli(
        "send",
        "--agent",
        agent,
        "--task",
        "hi",
        "--extension",
        REQUIRED,
        "--extension",
        UNKNOWN,
        "--wait",
      );
      expect(r.code, `${binding}: ${r.err}`).toBe(0);
      // The SDK hands its executor only the requested URIs its card declares.
      expect(r.out).toBe(`activated: ${REQUIRED}\n`);
      expect(r.err).toContain(`${label} did not activate extension ${UNKNOWN}`);
      expect(r.err).not.toContain(`extension ${REQUIRED}`);
    }
  });
});
