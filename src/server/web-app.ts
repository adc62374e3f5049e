import { createHash } from "node:crypto";
import { Elysia } from "elysia";
import { canonicalJson } from "./canonical-json";
import { openapi } from "@elysiajs/openapi";
import type { CallerIdentity } from "../protocol/caller";
import type { AgentCard } from "../protocol/types";

export interface WebAppOptions {
  /** The card this listener serves (it names the listener's own URL). */
  card: AgentCard;
  version: string;
  startedAt: number;
}

type Paths = NonNullable<NonNullable<NonNullable<Parameters<typeof openapi>[0]>["documentation"]>["paths"]>;
const JSON_ANSWER = { "application/json": { schema: { type: "object" as const } } };

/**
 * Routes answered before this app (request-router.ts: JSON-RPC; ops-routes.ts: health and metrics) are not
 * Elysia's, so they are described here by hand for the OpenAPI document.
 */
const HAND_DESCRIBED: Paths = {
  "/": {
    post: {
      summary: "A2A v1.0 JSON-RPC: SendMessage, SendStreamingMessage, GetTask, ListTasks, CancelTask, SubscribeToTask, push configs",
      description:
        "Send header A2A-Version: 1.0 (none: v0.3). Errors travel in the JSON-RPC body with HTTP 200, except a body over --max-body (413) and a peer over its rate limit (429, Retry-After).",
      parameters: [{ name: "A2A-Version", in: "header", required: true, schema: { type: "string", enum: ["1.0"] } }],
      requestBody: { required: true, content: { "application/json": { schema: { type: "object", required: ["jsonrpc", "method"] } } } },
      responses: {
        "200": { description: "A JSON-RPC response, or a text/event-stream of them for the streaming methods", content: JSON_ANSWER },
        "204": { description: "A notification (no id) was handled; JSON-RPC answers nothing" },
        "413": { description: "Body over --max-body (a JSON-RPC -32600 error)", content: JSON_ANSWER },
        "429": { description: "This peer is over its rate limit: Retry-After says when to try again (a JSON-RPC -32603 RESOURCE_EXHAUSTED error)", content: JSON_ANSWER },
      },
    },
  },
  "/health": { get: { summary: "Liveness, with the node's name and version and who it thinks you are", responses: { "200": { description: "The node runs", content: JSON_ANSWER } } } },
  "/health/live": { get: { summary: "Liveness: the process runs and answers", responses: { "200": { description: "Alive", content: JSON_ANSWER } } } },
  "/health/ready": {
    get: {
      summary: "Readiness: database writable, certificate valid (days left), model endpoint answering",
      responses: {
        "200": { description: "Every check passed", content: JSON_ANSWER },
        "503": { description: "A check failed: `failed` names it, `checks` says what each found", content: JSON_ANSWER },
      },
    },
  },
  "/metrics": {
    get: {
      summary: "Prometheus metrics (text format 0.0.4)",
      responses: { "200": { description: "The metrics", content: { "text/plain": { schema: { type: "string" as const } } } } },
    },
  },
};

/**
 * The node's HTTP surface apart from JSON-RPC, health and metrics: the agent card and the OpenAPI description
 * with its reference page. Elysia is only this adapter; the protocol core does not know it exists. The
 * verified caller reaches handlers through `callerOf`, keyed by the Request object, never through a header.
 */
export function createWebApp(o: WebAppOptions) {
  const callers = new WeakMap<Request, CallerIdentity>();
  const cardJson = JSON.stringify(o.card);
  // A stable ETag: the hash of the canonical card, the same on every start while the card is the same.
  const etag = `"${createHash("sha256").update(canonicalJson(o.card)).digest("base64url").slice(0, 27)}"`;
  const lastModified = new Date(Math.floor(o.startedAt / 1000) * 1000).toUTCString();
  const cardHeaders = { "content-type": "application/json", etag, "last-modified": lastModified, "cache-control": "public, max-age=300" };
  const title = `${o.card.name}: a2a-node ${o.version} API reference`;
  // The page and its viewer (4 MiB) are loaded on the first visit only.
  const page = () => import("./openapi-page");

  const app = new Elysia({ aot: true })
    .use(
      openapi({
        path: "/openapi",
        specPath: "/openapi/json",
        // No page from the plugin: its page loads its viewer from a CDN. Ours is below, served from the binary.
        provider: null,
        // The plugin leaves out paths with a dot as static files by default: the agent card is not one.
        exclude: { staticFile: false },
        documentation: {
          info: { title: "a2a-node", version: o.version, description: "A2A v1.0 over JSON-RPC, behind mutual TLS." },
          paths: HAND_DESCRIBED,
        },
      }),
    )
    .derive(({ request }) => ({ caller: callers.get(request) }))
    .get(
      "/.well-known/agent-card.json",
      ({ request }) => {
        const inm = request.headers.get("if-none-match");
        if (inm && inm.split(",").some((t) => t.trim() === etag || t.trim() === "*")) return new Response(null, { status: 304, headers: cardHeaders });
        return new Response(cardJson, { headers: cardHeaders });
      },
      { detail: { summary: "The A2A agent card" } },
    )
    .get(
      "/openapi",
      async () => {
        const { openApiPage, OPENAPI_PAGE_CSP } = await page();
        return new Response(openApiPage(title, "/openapi/json"), {
          headers: { "content-type": "text/html; charset=utf-8", "content-security-policy": OPENAPI_PAGE_CSP, "x-content-type-options": "nosniff" },
        });
      },
      { detail: { summary: "The API reference page (works offline: its viewer is served by the node)" } },
    )
    .get(
      "/openapi/:asset",
      async ({ params, request }) => {
        const { SCALAR_PATH, scalarAsset } = await page();
        if (`/openapi/${params.asset}` !== SCALAR_PATH) return new Response("not found\n", { status: 404 });
        const { body, headers } = scalarAsset(request.headers.get("accept-encoding"));
        return new Response(body, { headers });
      },
      { detail: { hide: true } },
    );

  return {
    app,
    handle(request: Request, caller: CallerIdentity): Promise<Response> {
      callers.set(request, caller);
      return app.handle(request);
    },
  };
}
