/**
 * Feasibility for issue 23 (e): what the conformance kit's gRPC transport needs, tried against our server
 * module with a throwaway in-memory agent (not the node's request handler). One plain port, as the node's
 * loopback listener would be: HTTP/1.1 serves the card (listing a GRPC interface at host:port), and a
 * connection that opens with the h2c preface goes to the gRPC server.
 *   bun test/grpc/feasibility/tck-server.ts 9911 &
 *   TCK_TRANSPORT=grpc /work/shared/tools/run-tck TCK_GIT_DIR http://127.0.0.1:9911 -k grpc
 */
import net from "node:net";
import { A2AError } from "../../../src/protocol/errors";
import type { StreamItem, Task } from "../../../src/protocol/types";
import { createGrpcServer, tagCaller, type GrpcCall } from "../../../src/grpc/server";

const port = Number(process.argv[2] ?? 9911);
const card = {
  name: "grpc feasibility agent",
  description: "echo over gRPC (src/grpc/server.ts with an in-memory task map)",
  version: "0.0.0",
  supportedInterfaces: [{ url: `127.0.0.1:${port}`, protocolBinding: "GRPC", protocolVersion: "1.0" }],
  capabilities: { streaming: true, pushNotifications: false, extendedAgentCard: false },
  defaultInputModes: ["text/plain"],
  defaultOutputModes: ["text/plain"],
  skills: [{ id: "echo", name: "echo", description: "echoes", tags: ["echo"] }],
};

const tasks = new Map<string, Task>();
const now = () => new Date().toISOString();

function newTask(request: Record<string, unknown>): Task {
  const message = request.message as {
    messageId: string;
    parts: { text?: string }[];
    taskId?: string;
    contextId?: string;
  };
  const existing = message.taskId ? tasks.get(message.taskId) : undefined;
  if (message.taskId && !existing) throw A2AError.taskNotFound(message.taskId);
  if (
    existing &&
    ["TASK_STATE_COMPLETED", "TASK_STATE_CANCELED", "TASK_STATE_FAILED", "TASK_STATE_REJECTED"].includes(
      existing.status.state,
    )
  ) {
    throw A2AError.unsupportedOperation(`task ${existing.id} is ${existing.status.state}`);
  }
  const id = existing?.id ?? crypto.randomUUID();
  const contextId = existing?.contextId ?? message.contextId ?? crypto.randomUUID();
  const text = message.parts?.map((p) => p.text ?? "").join("") ?? "";
  const input = text.includes("input-required");
  const task: Task = {
    id,
    contextId,
    status: {
      state: input ? "TASK_STATE_INPUT_REQUIRED" : "TASK_STATE_COMPLETED",
      message: {
        messageId: crypto.randomUUID(),
        role: "ROLE_AGENT",
        taskId: id,
        contextId,
        parts: [{ text: `echo: ${text}` }],
      },
      timestamp: now(),
    },
    history: [{ ...(message as unknown as NonNullable<Task["history"]>[number]), taskId: id, contextId }],
    artifacts: [{ artifactId: `${id}-echo`, parts: [{ text: `echo: ${text}` }] }],
  };
  tasks.set(id, task);
  return task;
}

async function handler(call: GrpcCall<string>): Promise<unknown> {
  const v = call.params.version;
  if (v !== null && v !== "1.0") throw A2AError.versionNotSupported(v);
  const r = call.request;
  switch (call.method.name) {
    case "SendMessage":
      return { task: newTask(r) };
    case "SendStreamingMessage": {
      const t = newTask(r);
      return (async function* (): AsyncIterable<StreamItem> {
        yield { response: { task: { ...t, status: { state: "TASK_STATE_WORKING", timestamp: now() } } } };
        yield { response: { statusUpdate: { taskId: t.id, contextId: t.contextId, status: t.status } } };
      })();
    }
    case "GetTask": {
      const t = tasks.get(String(r.id));
      if (!t) throw A2AError.taskNotFound(String(r.id));
      return t;
    }
    case "ListTasks":
      return { tasks: [...tasks.values()].slice(0, 50), nextPageToken: "", pageSize: 50, totalSize: tasks.size };
    case "CancelTask": {
      const t = tasks.get(String(r.id));
      if (!t) throw A2AError.taskNotFound(String(r.id));
      if (t.status.state !== "TASK_STATE_INPUT_REQUIRED") throw A2AError.taskNotCancelable(t.id, t.status.state);
      t.status = { state: "TASK_STATE_CANCELED", timestamp: now() };
      return t;
    }
    case "SubscribeToTask": {
      const t = tasks.get(String(r.id));
      if (!t) throw A2AError.taskNotFound(String(r.id));
      if (t.status.state !== "TASK_STATE_INPUT_REQUIRED")
        throw A2AError.unsupportedOperation(`task ${t.id} is ${t.status.state}`);
      return (async function* (): AsyncIterable<StreamItem> {
        yield { response: { task: t } };
      })();
    }
    case "GetExtendedAgentCard":
      throw A2AError.extendedCardNotConfigured();
    default:
      throw A2AError.pushNotSupported();
  }
}

const grpcServer = createGrpcServer<string>({
  handler,
  onInternalError: (e, m) => console.error(`internal error in ${m}:`, e),
});
const PREFACE = Buffer.from("PRI * HTTP/2.0");

net
  .createServer((socket) => {
    socket.once("data", (first: Buffer) => {
      socket.pause();
      socket.unshift(first);
      if (first.subarray(0, PREFACE.length).equals(PREFACE)) {
        tagCaller(socket, "@local");
        grpcServer.emit("connection", socket);
        socket.resume();
        return;
      }
      // A stand-in for the node's HTTP/1.1 listener: the card, and 404 for anything else.
      const head = first.toString("latin1");
      const body = head.startsWith("GET /.well-known/agent-card.json ") ? JSON.stringify(card) : "";
      const status = body ? "200 OK" : "404 Not Found";
      socket.end(
        `HTTP/1.1 ${status}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
      );
    });
  })
  .listen(port, "127.0.0.1", () => console.log(`grpc feasibility agent on 127.0.0.1:${port}`));
