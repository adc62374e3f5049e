/**
 * The URL patterns of A2A's HTTP+JSON binding (spec §11.3, and the `google.api.http` options of a2a.proto),
 * each naming the v1.0 operation it carries, by its JSON-RPC method name: both bindings then call the same
 * method table, so they cannot drift.
 *
 * Every pattern also has a `/{tenant}/…` form. A tenant routes between agents behind one endpoint; this node
 * is one agent and declares no tenant in its card, so a tenant segment is accepted and changes nothing
 * (tasks stay scoped to the caller's certificate, whatever tenant names them).
 */

export type HttpMethod = "GET" | "POST" | "DELETE";

export interface Route {
  /** The v1.0 operation (JSON-RPC method name) for each HTTP method the path allows. */
  operations: Partial<Record<HttpMethod, string>>;
  /** Parameters the path carries (`id`, `taskId`), decoded. */
  params: Record<string, string>;
  /** The `/{tenant}/…` segment, when the path has one. */
  tenant?: string;
}

/** What a path is to this binding: one of its routes, a path in its namespace that names nothing, or not its own. */
export type RouteMatch = Route | "not-found" | "bad-path" | undefined;

/** The first segment of every pattern: a path is this binding's if its first or second segment is one. */
const ROOTS = new Set(["message:send", "message:stream", "tasks", "extendedAgentCard"]);

/**
 * Matches a request path (without the query). Custom verbs follow the last `:` of a task segment, so a task
 * id holding a `:` must be sent percent-encoded, as clients do with encodeURIComponent.
 */
export function matchRoute(path: string): RouteMatch {
  const segments = path.split("/");
  segments.shift(); // the empty text before the leading "/"
  let tenant: string | undefined;
  if (!ROOTS.has(segments[0])) {
    if (segments.length < 2 || !ROOTS.has(segments[1])) return undefined;
    tenant = segments.shift();
  }
  try {
    const route = resolve(segments);
    if (!route) return "not-found";
    // "//tasks" (a base URL with a trailing slash, joined to a path) is no tenant at all.
    if (tenant) route.tenant = decodeURIComponent(tenant);
    return route;
  } catch {
    return "bad-path"; // malformed percent-encoding
  }
}

function resolve(s: string[]): Route | undefined {
  const n = s.length;
  switch (s[0]) {
    case "message:send":
      return n === 1 ? { operations: { POST: "SendMessage" }, params: {} } : undefined;
    case "message:stream":
      return n === 1 ? { operations: { POST: "SendStreamingMessage" }, params: {} } : undefined;
    case "extendedAgentCard":
      return n === 1 ? { operations: { GET: "GetExtendedAgentCard" }, params: {} } : undefined;
    case "tasks":
      break;
    default:
      return undefined;
  }
  if (n === 1) return { operations: { GET: "ListTasks" }, params: {} };
  const task = s[1];
  if (n === 2) {
    const colon = task.lastIndexOf(":");
    if (colon === -1) return { operations: { GET: "GetTask" }, params: { id: decodeURIComponent(task) } };
    const id = decodeURIComponent(task.slice(0, colon));
    switch (task.slice(colon + 1)) {
      case "cancel":
        return { operations: { POST: "CancelTask" }, params: { id } };
      case "subscribe":
        // The spec's text says POST, a2a.proto says GET: both are served.
        return { operations: { GET: "SubscribeToTask", POST: "SubscribeToTask" }, params: { id } };
      default:
        return undefined;
    }
  }
  if (s[2] !== "pushNotificationConfigs" || n > 4) return undefined;
  const taskId = decodeURIComponent(task);
  if (n === 3)
    return {
      operations: { POST: "CreateTaskPushNotificationConfig", GET: "ListTaskPushNotificationConfigs" },
      params: { taskId },
    };
  return {
    operations: { GET: "GetTaskPushNotificationConfig", DELETE: "DeleteTaskPushNotificationConfig" },
    params: { taskId, id: decodeURIComponent(s[3]) },
  };
}

/** Query parameters that are not strings: ProtoJSON numbers and booleans arrive as decimal text and true/false. */
const INTEGER_PARAMS = new Set(["historyLength", "pageSize"]);
const BOOLEAN_PARAMS = new Set(["includeArtifacts"]);
/** Service parameters and routing, not request fields. */
const NOT_FIELDS = new Set(["A2A-Version", "tenant"]);

/**
 * A GET or DELETE request's fields from its query string (spec §11.5: camelCase names; proto names are read
 * too). Returns the fields, or the name and text of the first value that is not of its field's type.
 */
export function queryFields(
  query: string,
): { fields: Record<string, unknown> } | { bad: string; value: string; expected: string } {
  const fields: Record<string, unknown> = {};
  for (const [raw, value] of new URLSearchParams(query)) {
    if (NOT_FIELDS.has(raw)) continue;
    const name = raw.includes("_") ? raw.replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase()) : raw;
    if (Object.hasOwn(fields, name)) continue; // a repeated scalar: the first one counts
    if (INTEGER_PARAMS.has(name)) {
      if (!/^-?\d{1,15}$/.test(value)) return { bad: raw, value, expected: "a whole number" };
      fields[name] = Number(value);
    } else if (BOOLEAN_PARAMS.has(name)) {
      if (value !== "true" && value !== "false") return { bad: raw, value, expected: "true or false" };
      fields[name] = value === "true";
    } else fields[name] = value;
  }
  return { fields };
}
