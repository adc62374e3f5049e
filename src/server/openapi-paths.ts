/**
 * The OpenAPI description of the two A2A bindings. Neither reaches Elysia (request-router.ts hands them to
 * the protocol core directly), so they are described here by hand, for GET /openapi.
 */
type Operation = Record<string, unknown>;

const VERSION_HEADER = { name: "A2A-Version", in: "header", required: true, schema: { type: "string", enum: ["1.0"] } };
const STATUS_ERRORS = {
  "400": {
    description:
      "google.rpc.Status: bad request, or an A2A error (ErrorInfo reason in details: TASK_NOT_CANCELABLE, UNSUPPORTED_OPERATION, ...)",
  },
  "403": {
    description:
      "google.rpc.Status, reason PERMISSION_DENIED: this node's authorization policy ([[authorize]]) does not let this peer make this call",
  },
  "404": { description: "google.rpc.Status, reason TASK_NOT_FOUND (another caller's task is not found either)" },
  "405": { description: "the path does not take this method (see Allow)" },
  "413": { description: "body over --max-body" },
  "415": { description: "body not JSON" },
  "429": {
    description:
      "google.rpc.Status, reason RESOURCE_EXHAUSTED: the node is at capacity, or this peer is over its rate limit (Retry-After says when to try again)",
  },
};
const JSON_BODY = {
  required: true,
  content: {
    "application/a2a+json": { schema: { type: "object" } },
    "application/json": { schema: { type: "object" } },
  },
};
const SSE = {
  "200": {
    description:
      "text/event-stream: data lines are StreamResponse objects, id lines event numbers for Last-Event-ID; a late error is an 'error' event",
  },
};
const path = (name: string, description: string) => ({
  name,
  in: "path",
  required: true,
  schema: { type: "string" },
  description,
});
const query = (name: string, type: string, description: string) => ({
  name,
  in: "query",
  schema: { type },
  description,
});

function op(summary: string, o: { params?: unknown[]; body?: boolean; stream?: boolean; ok?: string } = {}): Operation {
  return {
    summary,
    tags: ["HTTP+JSON"],
    parameters: [VERSION_HEADER, ...(o.params ?? [])],
    ...(o.body ? { requestBody: JSON_BODY } : {}),
    responses: {
      ...(o.stream
        ? SSE
        : { "200": { description: o.ok ?? "the operation's response message (application/a2a+json)" } }),
      ...STATUS_ERRORS,
    },
  };
}

const TASK_ID = path("id", "task id");
const CONFIG_TASK = path("taskId", "task id");
const SUBSCRIBE = op("SubscribeToTask: the task, then its events until it settles (GET and POST both work)", {
  params: [
    TASK_ID,
    {
      name: "Last-Event-ID",
      in: "header",
      schema: { type: "string" },
      description: "replay the events after this one",
    },
  ],
  stream: true,
});

export const BINDING_PATHS: Record<string, Record<string, Operation>> = {
  "/": {
    post: {
      summary: "A2A v1.0 JSON-RPC: every operation (SendMessage, GetTask, ListTasks, CancelTask, ...)",
      description:
        "Send header A2A-Version: 1.0. Errors travel in the JSON-RPC body with HTTP 200, except a body over --max-body (413) and a peer over its rate limit (429, Retry-After).",
      tags: ["JSON-RPC"],
      parameters: [VERSION_HEADER],
      requestBody: {
        required: true,
        content: { "application/json": { schema: { type: "object", required: ["jsonrpc", "method"] } } },
      },
      responses: {
        "200": { description: "A JSON-RPC response, or a text/event-stream of them for the streaming methods" },
        "204": { description: "A notification (no id) was handled; JSON-RPC answers nothing" },
        "413": { description: "Body over --max-body (a JSON-RPC -32600 error)" },
        "429": {
          description:
            "This peer is over its rate limit: Retry-After says when to try again (a JSON-RPC -32603 RESOURCE_EXHAUSTED error, id null)",
        },
      },
    },
  },
  "/message:send": { post: op("SendMessage: blocking by default; answers {task} or {message}", { body: true }) },
  "/message:stream": { post: op("SendStreamingMessage", { body: true, stream: true }) },
  "/tasks": {
    get: op("ListTasks: the caller's tasks, newest first", {
      params: [
        query("contextId", "string", "only this conversation"),
        query("status", "string", "only this state, e.g. TASK_STATE_WORKING"),
        query("pageSize", "integer", "1-100 (default 50)"),
        query("pageToken", "string", "nextPageToken of the page before"),
        query("historyLength", "integer", "messages of history per task"),
        query("statusTimestampAfter", "string", "ISO-8601 timestamp"),
        query("includeArtifacts", "boolean", "default false"),
      ],
    }),
  },
  "/tasks/{id}": {
    get: op("GetTask", { params: [TASK_ID, query("historyLength", "integer", "last N messages; 0: none")] }),
  },
  "/tasks/{id}:cancel": { post: op("CancelTask (body optional)", { params: [TASK_ID] }) },
  "/tasks/{id}:subscribe": { get: SUBSCRIBE, post: SUBSCRIBE },
  "/tasks/{taskId}/pushNotificationConfigs": {
    post: op("CreateTaskPushNotificationConfig (body: url, token, authentication)", {
      params: [CONFIG_TASK],
      body: true,
    }),
    get: op("ListTaskPushNotificationConfigs", {
      params: [CONFIG_TASK, query("pageSize", "integer", "1-100"), query("pageToken", "string", "")],
    }),
  },
  "/tasks/{taskId}/pushNotificationConfigs/{id}": {
    get: op("GetTaskPushNotificationConfig", { params: [CONFIG_TASK, path("id", "config id")] }),
    delete: op("DeleteTaskPushNotificationConfig", {
      params: [CONFIG_TASK, path("id", "config id")],
      ok: "{} (deleting a config already gone is no error)",
    }),
  },
  "/extendedAgentCard": {
    get: op(
      "GetExtendedAgentCard: the card with [extended_card] for fleet members (400 UNSUPPORTED_OPERATION where the card says capabilities.extendedAgentCard: false)",
    ),
  },
};

const JSON_ANSWER = { "application/json": { schema: { type: "object" } } };

/** Health and metrics (ops-routes.ts), answered before Elysia too, on every listener and on the admin port. */
export const OPS_PATHS_DOC: Record<string, Record<string, Operation>> = {
  "/health": {
    get: {
      summary: "Liveness, with the node's name and version and who it thinks you are",
      tags: ["Operations"],
      responses: { "200": { description: "The node runs", content: JSON_ANSWER } },
    },
  },
  "/health/live": {
    get: {
      summary: "Liveness: the process runs and answers",
      tags: ["Operations"],
      responses: { "200": { description: "Alive", content: JSON_ANSWER } },
    },
  },
  "/health/ready": {
    get: {
      summary: "Readiness: database writable, certificate valid (days left), model endpoint answering",
      tags: ["Operations"],
      responses: {
        "200": { description: "Every check passed", content: JSON_ANSWER },
        "503": {
          description: "A check failed: `failed` names it, `checks` says what each found",
          content: JSON_ANSWER,
        },
      },
    },
  },
  "/metrics": {
    get: {
      summary: "Prometheus metrics (text format 0.0.4)",
      tags: ["Operations"],
      responses: { "200": { description: "The metrics", content: { "text/plain": { schema: { type: "string" } } } } },
    },
  },
};
