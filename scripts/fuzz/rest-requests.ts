/**
 * Mutation class (c): A2A's HTTP+JSON binding (/message:send, /tasks/{id}, ...). A v1.0 request of any
 * operation becomes its route (path parameters, a query string or a JSON body, as the binding takes them),
 * then the path, the query, the HTTP method or the body is bent: a tenant segment, bad percent-encoding, ids
 * holding ':' or '/', an unknown custom verb, a method the route does not take, odd query values, and the
 * structural and text mutations of class (a) on the body.
 */
import type { Rng } from "./prng";
import type { HttpSpec } from "./http-request";
import { HOST } from "./http-request";
import { mutateBody, serialise } from "./mutate-json";
import { rpcRequest, V1_METHODS, type RpcRequest } from "./rpc-requests";

export interface RestRequest {
  spec: HttpSpec;
  /** The operation, then every mutation applied. */
  labels: string[];
  /** The body, if any, for the loopback check (safe-urls.ts). */
  body: Buffer;
}

type Params = Record<string, unknown>;
const enc = (v: unknown) => encodeURIComponent(String(v));

function query(p: Params, keys: string[]): string {
  const parts = keys.filter((k) => p[k] !== undefined).map((k) => `${k}=${enc(p[k])}`);
  return parts.length ? `?${parts.join("&")}` : "";
}

/** The route of a v1.0 request: HTTP method, path and query, and whether its params go in the body. */
function route(r: RpcRequest): { method: string; path: string; body?: Params } {
  const p = (r.envelope.params ?? {}) as Params;
  switch (r.method) {
    case "SendMessage":
      return { method: "POST", path: "/message:send", body: p };
    case "SendStreamingMessage":
      return { method: "POST", path: "/message:stream", body: p };
    case "GetTask":
      return { method: "GET", path: `/tasks/${enc(p.id)}${query(p, ["historyLength"])}` };
    case "ListTasks":
      return {
        method: "GET",
        path: `/tasks${query(p, ["contextId", "status", "pageSize", "pageToken", "historyLength", "statusTimestampAfter", "includeArtifacts"])}`,
      };
    case "CancelTask":
      return { method: "POST", path: `/tasks/${enc(p.id)}:cancel`, body: {} };
    case "SubscribeToTask":
      return { method: "GET", path: `/tasks/${enc(p.id)}:subscribe` };
    case "CreateTaskPushNotificationConfig": {
      const { taskId, ...config } = p;
      return { method: "POST", path: `/tasks/${enc(taskId)}/pushNotificationConfigs`, body: config };
    }
    case "GetTaskPushNotificationConfig":
      return { method: "GET", path: `/tasks/${enc(p.taskId)}/pushNotificationConfigs/${enc(p.id)}` };
    case "ListTaskPushNotificationConfigs":
      return {
        method: "GET",
        path: `/tasks/${enc(p.taskId)}/pushNotificationConfigs${query(p, ["pageSize", "pageToken"])}`,
      };
    case "DeleteTaskPushNotificationConfig":
      return { method: "DELETE", path: `/tasks/${enc(p.taskId)}/pushNotificationConfigs/${enc(p.id)}` };
    default:
      return { method: "GET", path: "/extendedAgentCard" };
  }
}

type PathOp = (rng: Rng, path: string) => string;
const PATH_OPS: [number, string, PathOp][] = [
  [3, "tenant", (rng, path) => `/${rng.pick(["t1", "%2F", "tenant%00", "..", "~"])}${path}`],
  [
    2,
    "bad-percent",
    (rng, path) => path.replace(/\/tasks\/[^/:?]*/, `/tasks/${rng.pick(["%zz", "%", "%E0%A4%A", "%00", "%FF"])}`),
  ],
  [
    2,
    "id-odd",
    (rng, path) =>
      path.replace(
        /\/tasks\/[^/:?]*/,
        `/tasks/${rng.pick(["a:b", "a%3Ab", "a%2Fb", "", "%20", "x".repeat(3000), ":cancel", "..%2F.."])}`,
      ),
  ],
  [
    2,
    "verb-odd",
    (rng, path) =>
      path.includes(":")
        ? path.replace(/:[a-z]+/i, `:${rng.pick(["Cancel", "foo", "", "cancel:cancel", "subscribe/"])}`)
        : `${path}:${rng.pick(["cancel", "x"])}`,
  ],
  [
    2,
    "extra-segment",
    (rng, path) => path.replace(/(\?|$)/, `/${rng.pick(["x", "", "pushNotificationConfigs", "..", "a/b/c"])}$1`),
  ],
  [
    3,
    "query-odd",
    (rng, path) =>
      `${path}${path.includes("?") ? "&" : "?"}${rng.pick(["historyLength=abc", "historyLength=-1", "historyLength=99999999999999999", "pageSize=0", "pageSize=1e3", "includeArtifacts=yes", "history_length=2", "pageSize=1&pageSize=2", "A2A-Version=0.3", "tenant=x", "%zz=1", "id=other", "taskId=other", "=", "&&&"])}`,
  ],
  [1, "trailing-slash", (_rng, path) => path.replace(/(\?|$)/, "/$1")],
];
const PATH_TABLE = PATH_OPS.map(([w, name, op]) => [w, [name, op]] as const);
const METHODS_ODD = ["PUT", "PATCH", "DELETE", "GET", "POST", "HEAD", "OPTIONS"];

export function restRequest(rng: Rng, maxBody: number): RestRequest {
  const request = rpcRequest(rng, rng.pick(V1_METHODS));
  const r = route(request);
  const labels = [`rest ${request.method}`];
  let method = r.method;
  let path = r.path;
  // the spec's text says POST, a2a.proto GET: both are served
  if (request.method === "SubscribeToTask" && rng.chance(0.3)) method = "POST";
  let body = r.body === undefined ? Buffer.alloc(0) : serialise(r.body);
  for (
    let n = rng.weighted([
      [3, 0],
      [4, 1],
      [2, 2],
    ] as const);
    n > 0;
    n--
  ) {
    const kind = rng.weighted([
      [4, "path"],
      [r.body ? 5 : 1, "body"],
      [1, "method"],
    ] as const);
    if (kind === "path") {
      const [name, op] = rng.weighted(PATH_TABLE);
      path = op(rng, path);
      labels.push(name);
    } else if (kind === "method") {
      method = rng.pick(METHODS_ODD);
      labels.push("method-odd");
    } else {
      const m = mutateBody(rng, r.body ?? {}, maxBody);
      body = m.body;
      labels.push(...m.labels);
      break;
    }
  }
  const headers: [string, string][] = [["Host", HOST]];
  if (rng.chance(0.95)) headers.push(["A2A-Version", "1.0"]);
  if (body.length > 0 || rng.chance(0.2))
    headers.push(["Content-Type", rng.pick(["application/a2a+json", "application/json", "text/plain"])]);
  if (rng.chance(0.2))
    headers.push(["Accept", rng.pick(["application/a2a+json", "application/json", "text/event-stream", "*/*"])]);
  return {
    spec: {
      method,
      target: path,
      version: "HTTP/1.1",
      headers,
      body,
      framing: body.length > 0 || method === "POST" ? "length" : "none",
    },
    labels,
    body,
  };
}
