/** A2A v1.0 JSON forms (src/protocol/types.ts) as a2a-node writes them, for the gRPC round-trip tests. */
import type { AgentCard, Message, StreamResponse, Task } from "../../src/protocol/types";

export const userMessage: Message = {
  messageId: "m-1",
  contextId: "ctx-1",
  role: "ROLE_USER",
  parts: [
    { text: "hello, π and 😀" },
    { raw: "AAEC/f7/", mediaType: "application/octet-stream", filename: "blob.bin" },
    { url: "https://example.com/a.pdf", mediaType: "application/pdf" },
    { data: { n: 1.5, list: [1, "two", null, true, { deep: [] }], empty: {}, none: null }, metadata: { source: "test" } },
  ],
  metadata: { trace: { id: "t-1", sampled: false } },
  extensions: ["https://example.com/ext/v1"],
  referenceTaskIds: ["t-0"],
};

export const task: Task = {
  id: "t-1",
  contextId: "ctx-1",
  status: {
    state: "TASK_STATE_COMPLETED",
    message: { messageId: "m-2", contextId: "ctx-1", taskId: "t-1", role: "ROLE_AGENT", parts: [{ text: "done" }] },
    timestamp: "2026-12-02T15:40:01.123Z",
  },
  artifacts: [{ artifactId: "a-1", name: "answer", description: "the reply", parts: [{ text: "42" }], extensions: ["x"] }],
  history: [userMessage],
  metadata: { owner: "caller", n: 3 },
};

export const card: AgentCard = {
  name: "node-a",
  description: "an a2a-node",
  version: "0.1.0",
  supportedInterfaces: [
    { url: "node-a.example:7443", protocolBinding: "GRPC", protocolVersion: "1.0" },
    { url: "https://node-a.example:7443/a2a", protocolBinding: "JSONRPC", protocolVersion: "1.0" },
  ],
  provider: { organization: "fleet", url: "https://example.com" },
  documentationUrl: "https://example.com/docs",
  capabilities: {
    streaming: true,
    pushNotifications: false,
    extendedAgentCard: true,
    extensions: [{ uri: "https://example.com/ext/v1", description: "an extension", required: true, params: { k: "v" } }],
  },
  securitySchemes: { mtls: { mtlsSecurityScheme: { description: "fleet certificates" } } },
  securityRequirements: [{ schemes: { mtls: { list: ["fleet"] } } }],
  defaultInputModes: ["text/plain"],
  defaultOutputModes: ["text/plain", "application/json"],
  skills: [{ id: "s", name: "skill", description: "does things", tags: ["a", "b"], examples: ["do it"], inputModes: ["text/plain"] }],
  signatures: [{ protected: "eyJhbGciOiJFUzI1NiJ9", signature: "c2ln", header: { kid: "k1" } }],
};

export const streamItems: StreamResponse[] = [
  { task },
  { message: userMessage },
  { statusUpdate: { taskId: "t-1", contextId: "ctx-1", status: { state: "TASK_STATE_WORKING", timestamp: "2026-12-02T15:40:00.000Z" }, metadata: { seq: 4 } } },
  { artifactUpdate: { taskId: "t-1", contextId: "ctx-1", artifact: { artifactId: "a-1", parts: [{ text: "4" }] }, append: true, lastChunk: true } },
];
