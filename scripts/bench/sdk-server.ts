/**
 * The reference point: the official @a2a-js/sdk server doing the same echo, the way its README wires it
 * (DefaultRequestHandler + a task store + the express JSON-RPC and agent-card handlers), behind the same
 * mutual TLS (node:https demanding a client certificate from the fleet CA). The store is its InMemoryTaskStore,
 * or its durable DatabaseTaskStore on Postgres or SQLite (see sdk-stores.ts).
 *
 *   bun scripts/bench/sdk-server.ts PORT BUNDLE_JSON [memory | postgres://… | sqlite:FILE] [NORMAL | FULL]
 * The last argument is SQLite's `synchronous` (default NORMAL). Prints "listening" on stdout once it accepts
 * connections.
 */
import { createServer } from "node:https";
import express from "express";
import { AGENT_CARD_PATH, TaskState, type AgentCard, type Message } from "@a2a-js/sdk";
import {
  AgentEvent,
  DefaultRequestHandler,
  type AgentExecutor,
  type ExecutionEventBus,
  type RequestContext,
} from "@a2a-js/sdk/server";
import { agentCardHandler, jsonRpcHandler, UserBuilder } from "@a2a-js/sdk/server/express";
import { readBundle } from "./rpc";
import { openSdkStore } from "./sdk-stores";

const [port, bundlePath, store = "memory", synchronous = "NORMAL"] = process.argv.slice(2);
if (synchronous !== "NORMAL" && synchronous !== "FULL") throw new Error(`synchronous must be NORMAL or FULL`);
const bundle = readBundle(bundlePath);

/** Echo, as the SDK expects an executor to report work: the Task, its artifact, then the terminal status. */
class EchoExecutor implements AgentExecutor {
  async execute(ctx: RequestContext, bus: ExecutionEventBus): Promise<void> {
    const { taskId, contextId, userMessage } = ctx;
    const part = userMessage.parts[0]?.content;
    const text = part?.$case === "text" ? part.value : "";
    const message: Message = { ...userMessage, taskId, contextId };
    bus.publish(
      AgentEvent.task({
        id: taskId,
        contextId,
        status: { state: TaskState.TASK_STATE_SUBMITTED, message: undefined, timestamp: new Date().toISOString() },
        artifacts: [],
        history: [message],
        metadata: undefined,
      }),
    );
    bus.publish(
      AgentEvent.artifactUpdate({
        taskId,
        contextId,
        artifact: {
          artifactId: `${taskId}-echo`,
          name: "echo",
          description: "",
          parts: [{ content: { $case: "text", value: text }, metadata: undefined, filename: "", mediaType: "" }],
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
        status: { state: TaskState.TASK_STATE_COMPLETED, message: undefined, timestamp: new Date().toISOString() },
        metadata: undefined,
      }),
    );
    bus.finished();
  }

  async cancelTask(): Promise<void> {}
}

const url = `https://127.0.0.1:${port}/`;
const card: AgentCard = {
  name: "sdk-echo",
  description: "@a2a-js/sdk echo agent for the a2a-node bench",
  version: "1.0.0",
  supportedInterfaces: [{ url, protocolBinding: "JSONRPC", protocolVersion: "1.0", tenant: "" }],
  provider: undefined,
  capabilities: { streaming: false, pushNotifications: false, extensions: [], extendedAgentCard: false },
  securitySchemes: {
    mtls: { scheme: { $case: "mtlsSecurityScheme", value: { description: "fleet CA client certificate" } } },
  },
  securityRequirements: [{ schemes: { mtls: { list: [] } } }],
  defaultInputModes: ["text/plain"],
  defaultOutputModes: ["text/plain"],
  skills: [
    {
      id: "echo",
      name: "Echo",
      description: "Answers with the message's own text.",
      tags: ["echo"],
      examples: [],
      inputModes: [],
      outputModes: [],
      securityRequirements: [],
    },
  ],
  signatures: [],
};

const handler = new DefaultRequestHandler(card, (await openSdkStore(store, synchronous)).store, new EchoExecutor());
const app = express();
app.use(`/${AGENT_CARD_PATH}`, agentCardHandler({ agentCardProvider: handler }));
app.use("/", jsonRpcHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication }));

const server = createServer(
  { cert: bundle.cert, key: bundle.key, ca: bundle.caCert, requestCert: true, rejectUnauthorized: true },
  app,
);
server.keepAliveTimeout = 65_000;
server.listen(Number(port), "127.0.0.1", () => console.log("listening"));
