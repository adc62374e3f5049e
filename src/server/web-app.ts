import { createHash } from "node:crypto";
import { Elysia } from "elysia";
import { canonicalJson } from "../protocol/canonical-json";
import { BINDING_PATHS, OPS_PATHS_DOC } from "./openapi-paths";
import { openapi } from "@elysiajs/openapi";
import type { CallerIdentity } from "../rpc/caller";
import type { AgentCard } from "../protocol/types";

export interface WebAppOptions {
  /**
   * The card this listener serves (it names the listener's own URL), asked for at each request: a new identity
   * (renewal, SIGHUP) comes with a newly signed card. The same object twice is served from what was made of it.
   */
  card: () => AgentCard | Promise<AgentCard>;
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
  const lastModified = new Date(Math.floor(o.startedAt / 1000) * 1000).toUTCString();
  const served = new WeakMap<AgentCard, { json: string; etag: string; headers: Record<string, string> }>();
  const current = async () => {
    const card = await o.card();
    let s = served.get(card);
    if (!s) {
      // A stable ETag: the hash of the canonical card without its signatures (an ECDSA signature differs at every
      // signing) and of the certificates that signed it, the same on every start while both are the same.
      const { signatures, ...unsigned } = card;
      const signers = (signatures ?? []).map(
        (sig) => JSON.parse(Buffer.from(sig.protected, "base64url").toString("utf8")).x5c ?? null,
      );
      const etag = `"${createHash("sha256")
        .update(canonicalJson({ card: unsigned, signers }))
        .digest("base64url")
        .slice(0, 27)}"`;
      s = {
        json: JSON.stringify(card),
        etag,
        headers: {
          "content-type": "application/json",
          etag,
          "last-modified": lastModified,
          "cache-control": "public, max-age=300",
        },
      };
      served.set(card, s);
    }
    return s;
  };
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
          info: {
            title: "a2a-node",
            version: o.version,
            description: "A2A v1.0 over JSON-RPC and HTTP+JSON, behind mutual TLS.",
          },
          // Neither binding nor the health and metrics routes reach Elysia (see request-router.ts): they are
          // described by hand. Each HTTP+JSON route also answers under a /{tenant} prefix.
          paths: { ...BINDING_PATHS, ...OPS_PATHS_DOC } as Paths,
        },
      }),
    )
    .derive(({ request }) => ({ caller: callers.get(request) }))
    .get(
      "/.well-known/agent-card.json",
      async ({ request }) => {
        const { json, etag, headers } = await current();
        const inm = request.headers.get("if-none-match");
        if (inm && inm.split(",").some((t) => t.trim() === etag || t.trim() === "*"))
          return new Response(null, { status: 304, headers });
        return new Response(json, { headers });
      },
      { detail: { summary: "The A2A agent card" } },
    )
    .get(
      "/openapi",
      async () => {
        const { openApiPage, OPENAPI_PAGE_CSP } = await page();
        // The card is read at each visit (it is a function: a reload may rename the agent), for the title.
        const title = `${(await o.card()).name}: a2a-node ${o.version} API reference`;
        return new Response(openApiPage(title, "/openapi/json"), {
          headers: {
            "content-type": "text/html; charset=utf-8",
            "content-security-policy": OPENAPI_PAGE_CSP,
            "x-content-type-options": "nosniff",
          },
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
