/**
 * Feasibility probe for issue 23 (d): @a2a-js/sdk 1.3.0's gRPC client (`@a2a-js/sdk/client/grpc`, built on
 * @grpc/grpc-js and @bufbuild/protobuf/wire) and its gRPC server (`@a2a-js/sdk/server/grpc`) on Bun, over TLS
 * with client certificates from our PKI: SendMessage, SendStreamingMessage, GetTask, an error's mapping.
 *   bun test/grpc/feasibility/sdk-grpc.ts   (and compiled, see node-http2.ts)
 */
import * as grpc from "@grpc/grpc-js";
import { TaskState, type AgentCard, type Message } from "@a2a-js/sdk";
import {
  AgentEvent,
  DefaultRequestHandler,
  InMemoryTaskStore,
  type AgentExecutor,
  type ExecutionEventBus,
  type RequestContext,
} from "@a2a-js/sdk/server";
import { A2AService, grpcService, UserBuilder } from "@a2a-js/sdk/server/grpc";
import { ClientFactory, ClientFactoryOptions } from "@a2a-js/sdk/client";
import { GrpcTransportFactory } from "@a2a-js/sdk/client/grpc";
import { probeCerts, Verdicts, withTimeout } from "./certs";

const certs = await probeCerts();
const v = new Verdicts();

class Echo implements AgentExecutor {
  async execute(ctx: RequestContext, bus: ExecutionEventBus): Promise<void> {
    const part = ctx.userMessage.parts[0]?.content;
    const text = part?.$case === "text" ? part.value : "";
    const reply: Message = {
      ...ctx.userMessage,
      messageId: `${ctx.taskId}-r`,
      taskId: ctx.taskId,
      contextId: ctx.contextId,
      role: 2,
      parts: [{ content: { $case: "text", value: `echo: ${text}` }, metadata: undefined, filename: "", mediaType: "" }],
    };
    bus.publish(
      AgentEvent.task({
        id: ctx.taskId,
        contextId: ctx.contextId,
        status: { state: TaskState.TASK_STATE_WORKING, message: undefined, timestamp: new Date().toISOString() },
        artifacts: [],
        history: [ctx.userMessage],
        metadata: undefined,
      }),
    );
    bus.publish(
      AgentEvent.statusUpdate({
        taskId: ctx.taskId,
        contextId: ctx.contextId,
        status: { state: TaskState.TASK_STATE_COMPLETED, message: reply, timestamp: new Date().toISOString() },
        metadata: undefined,
      }),
    );
    bus.finished();
  }
  async cancelTask(): Promise<void> {}
}

const server = new grpc.Server();
const card = (url: string): AgentCard =>
  ({
    name: "probe",
    description: "probe",
    version: "1",
    supportedInterfaces: [{ url, protocolBinding: "GRPC", tenant: "", protocolVersion: "1.0" }],
    capabilities: { streaming: true, pushNotifications: false, extensions: [], extendedAgentCard: false },
    securitySchemes: {},
    securityRequirements: [],
    defaultInputModes: ["text/plain"],
    defaultOutputModes: ["text/plain"],
    skills: [],
    signatures: [],
  }) as unknown as AgentCard;
let seenUser = "";
const userBuilder: UserBuilder = async (call: unknown) => {
  const cn = (call as grpc.ServerUnaryCall<unknown, unknown>).getAuthContext?.()?.sslPeerCertificate?.subject?.CN;
  seenUser = String(cn);
  return { isAuthenticated: true, userName: String(cn) };
};
const serverCreds = grpc.ServerCredentials.createSsl(
  Buffer.from(certs.ca),
  [{ cert_chain: Buffer.from(certs.server.cert), private_key: Buffer.from(certs.server.key) }],
  true,
);
const port = await new Promise<number>((resolve, reject) =>
  server.bindAsync("127.0.0.1:0", serverCreds, (e, p) => (e ? reject(e) : resolve(p))),
);
const url = `localhost:${port}`;
const handler = new DefaultRequestHandler(card(url), new InMemoryTaskStore(), new Echo());
server.addService(A2AService, grpcService({ requestHandler: handler, userBuilder }));

const factory = new ClientFactory(
  ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
    transports: [
      new GrpcTransportFactory({
        grpcChannelCredentials: grpc.credentials.createSsl(
          Buffer.from(certs.ca),
          Buffer.from(certs.client.key),
          Buffer.from(certs.client.cert),
        ),
      }),
    ],
    preferredTransports: ["GRPC"],
  }),
);
const client = await factory.createFromAgentCard(card(url));
const message = (text: string): Message => ({
  messageId: crypto.randomUUID(),
  contextId: "",
  taskId: "",
  role: 1,
  parts: [{ content: { $case: "text", value: text }, metadata: undefined, filename: "", mediaType: "" }],
  metadata: undefined,
  extensions: [],
  referenceTaskIds: [],
});

let taskId = "";
await v.check("SDK gRPC client -> SDK gRPC server on Bun (TLS + client cert): SendMessage", async () => {
  const r = (await withTimeout(
    client.sendMessage({ tenant: "", message: message("hi"), configuration: undefined, metadata: undefined }),
  )) as unknown as { id?: string; status?: { state: number } };
  taskId = r.id ?? "";
  if (!taskId) throw new Error(`answer ${JSON.stringify(r).slice(0, 200)}`);
  return `task ${taskId.slice(0, 8)} state ${r.status?.state}, server saw caller CN=${seenUser}`;
});

await v.check("SDK gRPC: SendStreamingMessage (server streaming)", async () => {
  const kinds: string[] = [];
  await withTimeout(
    (async () => {
      for await (const ev of client.sendMessageStream({
        tenant: "",
        message: message("stream"),
        configuration: undefined,
        metadata: undefined,
      })) {
        kinds.push(String((ev as { payload?: { $case?: string } }).payload?.$case ?? Object.keys(ev).join("/")));
      }
    })(),
  );
  if (kinds.length < 2) throw new Error(`events ${kinds.join()}`);
  return `events ${kinds.join(", ")}`;
});

await v.check("SDK gRPC: GetTask unknown id maps to TaskNotFoundError", async () => {
  try {
    await withTimeout(client.getTask({ tenant: "", id: "no-such-task", historyLength: undefined }));
  } catch (e) {
    return `${(e as Error).constructor.name}: ${(e as Error).message}`;
  }
  throw new Error("no error");
});

server.forceShutdown();
console.log(v.failed ? `${v.failed} piece(s) failed` : "all pieces work");
process.exit(v.failed ? 1 : 0);
