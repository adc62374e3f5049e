/**
 * Well-formed JSON-RPC requests of every method the node serves (A2A v1.0, v0.3 and the legacy Hermes ones),
 * with the optional fields chosen at random: the starting points the mutators bend out of shape. Ids of tasks
 * and conversations are tokens (tokens.ts), mostly of the caller's own tasks, sometimes another caller's,
 * sometimes made up.
 */
import type { Rng } from "./prng";
import { foreignTask, ownContext, ownTask, POOL_SIZE, SINK_PORT } from "./tokens";

export interface RpcRequest {
  /** The A2A-Version header to send ("1.0"), or null to send none (v0.3 and the legacy methods). */
  version: "1.0" | null;
  method: string;
  /** Streaming methods answer server-sent events. */
  streaming: boolean;
  envelope: Record<string, unknown>;
}

type Params = Record<string, unknown> | undefined;
interface MethodSpec {
  weight: number;
  version: "1.0" | null;
  streaming?: boolean;
  params(rng: Rng): Params;
}

const TEXTS = [
  "hello",
  "summarise this",
  "",
  " ",
  "ünïcödé ✓",
  "🙂🙃",
  "a\nb\tc",
  "\u202eevil",
  "x".repeat(300),
  "null",
  "{}",
];

export function text(rng: Rng): string {
  return rng.chance(0.7) ? `fuzz ${rng.u32().toString(36)}` : rng.pick(TEXTS);
}

/** A task id: the caller's own mostly, then another caller's, then one nobody made. */
export function taskRef(rng: Rng): string {
  return rng.weighted<() => string>([
    [6, () => ownTask(rng.int(POOL_SIZE))],
    [2, () => foreignTask(rng.int(POOL_SIZE))],
    [1, () => "01JAAAAAAAAAAAAAAAAAAAAAAA"],
    [1, () => rng.u32().toString(16)],
  ])();
}

/** A webhook URL: the sink (allowed), or loopback and private addresses the guard must refuse. Never a name. */
export function webhookUrl(rng: Rng): string {
  return rng.weighted<string>([
    [6, `http://127.0.0.1:${SINK_PORT}/hook/${rng.int(100)}`],
    [1, "http://127.0.0.1:9/nothing-here"],
    [1, "http://[::1]:8080/"],
    [1, "http://169.254.169.254/latest/meta-data"],
    [1, "http://10.0.0.1/"],
    [1, "ftp://127.0.0.1/"],
    [1, "not a url"],
  ]);
}

function message(rng: Rng, v03: boolean): Record<string, unknown> {
  const m: Record<string, unknown> = v03
    ? {
        kind: "message",
        messageId: `m-${rng.u32().toString(36)}`,
        role: rng.chance(0.9) ? "user" : "agent",
        parts: [{ kind: "text", text: text(rng) }],
      }
    : {
        messageId: `m-${rng.u32().toString(36)}`,
        role: rng.chance(0.9) ? "ROLE_USER" : "ROLE_AGENT",
        parts: [{ text: text(rng) }],
      };
  if (rng.chance(0.3)) m.contextId = rng.chance(0.8) ? ownContext(rng.int(POOL_SIZE)) : `ctx-${rng.int(1000)}`;
  if (rng.chance(0.1)) m.taskId = taskRef(rng);
  if (rng.chance(0.15)) m.metadata = { skill: rng.pick(["default", "none", ""]), n: rng.int(10) };
  if (rng.chance(0.1))
    (m.parts as unknown[]).push(
      v03 ? { kind: "data", data: { a: [1, 2, { b: null }] } } : { data: { a: [1, 2, { b: null }] } },
    );
  if (rng.chance(0.05))
    (m.parts as unknown[]).push(
      v03
        ? { kind: "file", file: { uri: "http://127.0.0.1:9/f", mimeType: "text/plain" } }
        : { url: "http://127.0.0.1:9/f", mediaType: "text/plain" },
    );
  if (rng.chance(0.05)) m.referenceTaskIds = [taskRef(rng)];
  return m;
}

function sendParams(rng: Rng, v03: boolean): Params {
  const p: Record<string, unknown> = { message: message(rng, v03) };
  if (rng.chance(0.4)) {
    const c: Record<string, unknown> = {};
    if (rng.chance(0.5)) c[v03 ? "blocking" : "returnImmediately"] = rng.chance(0.5);
    if (rng.chance(0.3)) c.historyLength = rng.pick([0, 1, 5, 1000]);
    if (rng.chance(0.2)) c.acceptedOutputModes = ["text/plain", "application/json"];
    if (rng.chance(0.15)) {
      const cfg = { url: webhookUrl(rng), token: rng.chance(0.5) ? `tok-${rng.int(1e6)}` : undefined };
      c[v03 ? "pushNotificationConfig" : "taskPushNotificationConfig"] = cfg;
    }
    p.configuration = c;
  }
  if (rng.chance(0.1)) p.metadata = { trace: rng.u32() };
  return p;
}

const pushConfig = (rng: Rng): Record<string, unknown> => {
  const c: Record<string, unknown> = { url: webhookUrl(rng) };
  if (rng.chance(0.5)) c.id = `cfg-${rng.int(4)}`;
  if (rng.chance(0.5)) c.token = `tok-${rng.int(1e6)}`;
  if (rng.chance(0.2)) c.authentication = { scheme: "Bearer", credentials: "secret" };
  return c;
};

const STATES = ["TASK_STATE_COMPLETED", "TASK_STATE_WORKING", "TASK_STATE_FAILED", "TASK_STATE_UNSPECIFIED", ""];

const METHODS: Record<string, MethodSpec> = {
  SendMessage: { weight: 14, version: "1.0", params: (rng) => sendParams(rng, false) },
  SendStreamingMessage: { weight: 5, version: "1.0", streaming: true, params: (rng) => sendParams(rng, false) },
  GetTask: {
    weight: 8,
    version: "1.0",
    params: (rng) => ({ id: taskRef(rng), ...(rng.chance(0.3) ? { historyLength: rng.pick([0, 2, 100]) } : {}) }),
  },
  ListTasks: {
    weight: 6,
    version: "1.0",
    params: (rng) => {
      const p: Record<string, unknown> = {};
      if (rng.chance(0.3)) p.contextId = ownContext(rng.int(POOL_SIZE));
      if (rng.chance(0.3)) p.status = rng.pick(STATES);
      if (rng.chance(0.4)) p.pageSize = rng.pick([1, 2, 50, 100]);
      if (rng.chance(0.2)) p.pageToken = rng.pick(["", "abc", "t:01JAAAAAAAAAAAAAAAAAAAAAAA"]);
      if (rng.chance(0.2)) p.historyLength = rng.pick([0, 3]);
      if (rng.chance(0.2))
        p.statusTimestampAfter = rng.pick(["2020-01-01T00:00:00Z", "2999-01-01T00:00:00.000Z", "yesterday"]);
      if (rng.chance(0.3)) p.includeArtifacts = rng.chance(0.5);
      return rng.chance(0.1) ? undefined : p;
    },
  },
  CancelTask: { weight: 4, version: "1.0", params: (rng) => ({ id: taskRef(rng) }) },
  SubscribeToTask: { weight: 4, version: "1.0", streaming: true, params: (rng) => ({ id: taskRef(rng) }) },
  CreateTaskPushNotificationConfig: {
    weight: 4,
    version: "1.0",
    params: (rng) => ({ taskId: taskRef(rng), ...pushConfig(rng) }),
  },
  GetTaskPushNotificationConfig: {
    weight: 2,
    version: "1.0",
    params: (rng) => ({ taskId: taskRef(rng), id: `cfg-${rng.int(4)}` }),
  },
  ListTaskPushNotificationConfigs: {
    weight: 2,
    version: "1.0",
    params: (rng) => ({ taskId: taskRef(rng), ...(rng.chance(0.3) ? { pageSize: rng.pick([1, 100]) } : {}) }),
  },
  DeleteTaskPushNotificationConfig: {
    weight: 2,
    version: "1.0",
    params: (rng) => ({ taskId: taskRef(rng), id: `cfg-${rng.int(4)}` }),
  },
  GetExtendedAgentCard: { weight: 1, version: "1.0", params: () => ({}) },
  "message/send": { weight: 3, version: null, params: (rng) => sendParams(rng, true) },
  "message/stream": { weight: 1, version: null, streaming: true, params: (rng) => sendParams(rng, true) },
  "tasks/get": {
    weight: 2,
    version: null,
    params: (rng) => (rng.chance(0.3) ? { taskId: taskRef(rng) } : { id: taskRef(rng) }),
  },
  "tasks/cancel": { weight: 1, version: null, params: (rng) => ({ id: taskRef(rng) }) },
  "tasks/resubscribe": { weight: 1, version: null, streaming: true, params: (rng) => ({ id: taskRef(rng) }) },
  "tasks/pushNotificationConfig/set": {
    weight: 1,
    version: null,
    params: (rng) => ({ taskId: taskRef(rng), pushNotificationConfig: pushConfig(rng) }),
  },
  "tasks/pushNotificationConfig/get": {
    weight: 1,
    version: null,
    params: (rng) => ({
      id: taskRef(rng),
      ...(rng.chance(0.5) ? { pushNotificationConfigId: `cfg-${rng.int(4)}` } : {}),
    }),
  },
  "tasks/pushNotificationConfig/list": { weight: 1, version: null, params: (rng) => ({ id: taskRef(rng) }) },
  "tasks/pushNotificationConfig/delete": {
    weight: 1,
    version: null,
    params: (rng) => ({ id: taskRef(rng), pushNotificationConfigId: `cfg-${rng.int(4)}` }),
  },
  "agent/getAuthenticatedExtendedCard": { weight: 1, version: null, params: () => undefined },
  "tasks/send": {
    weight: 2,
    version: null,
    params: (rng) => ({
      task: text(rng) || "t",
      ...(rng.chance(0.3) ? { requester: "someone", taskId: `legacy-${rng.int(1e6)}` } : {}),
    }),
  },
};

const TABLE = Object.entries(METHODS).map(([name, spec]) => [spec.weight, name] as const);
export const METHOD_NAMES = Object.keys(METHODS);
/** The v1.0 operations (the ones the HTTP+JSON binding carries too). */
export const V1_METHODS = METHOD_NAMES.filter((m) => METHODS[m].version === "1.0");

/** One well-formed request of a method picked by weight (or the one named). */
export function rpcRequest(rng: Rng, method = rng.weighted(TABLE)): RpcRequest {
  const spec = METHODS[method];
  const envelope: Record<string, unknown> = {
    jsonrpc: "2.0",
    id: rng.chance(0.7) ? rng.int(1e6) : `req-${rng.u32().toString(36)}`,
    method,
  };
  const params = spec.params(rng);
  if (params !== undefined) envelope.params = params;
  return { version: spec.version, method, streaming: spec.streaming ?? false, envelope };
}
