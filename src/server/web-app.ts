import { createHash } from "node:crypto";
import { Elysia } from "elysia";
import { canonicalJson } from "../protocol/canonical-json";
import { BINDING_PATHS, OPS_PATHS_DOC } from "./openapi-paths";
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

/**
 * The node's HTTP surface apart from the A2A bindings, health and metrics: the agent card and the OpenAPI
 * description with its reference page. Elysia is only this adapter; the protocol core does not know it exists.
 * The verified caller reaches handlers through `callerOf`, keyed by the Request object, never through a header.
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
          info: { title: "a2a-node", version: o.version, description: "A2A v1.0 over JSON-RPC and HTTP+JSON, behind mutual TLS." },
          // Neither binding nor the health and metrics routes reach Elysia (see request-router.ts): they are
          // described by hand. Each HTTP+JSON route also answers under a /{tenant} prefix.
          paths: { ...BINDING_PATHS, ...OPS_PATHS_DOC } as Paths,
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
