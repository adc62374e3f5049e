import { createHash } from "node:crypto";
import { Elysia } from "elysia";
import { canonicalJson } from "./canonical-json";
import { BINDING_PATHS } from "./openapi-paths";
import { openapi } from "@elysiajs/openapi";
import type { CallerIdentity } from "../protocol/caller";
import type { AgentCard } from "../protocol/types";
import type { Readiness } from "../executors/executor";

export interface WebAppOptions {
  /** The card this listener serves (it names the listener's own URL). */
  card: AgentCard;
  version: string;
  executor: string;
  startedAt: number;
  /** Whether the executor's backing service (the model server) answers. */
  ready(signal: AbortSignal): Promise<Readiness>;
}

/**
 * The node's HTTP surface apart from the A2A bindings: the agent card, health, and the OpenAPI description. Elysia
 * is only this adapter; the protocol core does not know it exists. The verified caller reaches handlers
 * through `callerOf`, keyed by the Request object, never through a header.
 */
export function createWebApp(o: WebAppOptions) {
  const callers = new WeakMap<Request, CallerIdentity>();
  const cardJson = JSON.stringify(o.card);
  // A stable ETag: the hash of the canonical card, the same on every start while the card is the same.
  const etag = `"${createHash("sha256").update(canonicalJson(o.card)).digest("base64url").slice(0, 27)}"`;
  const lastModified = new Date(Math.floor(o.startedAt / 1000) * 1000).toUTCString();
  const cardHeaders = { "content-type": "application/json", etag, "last-modified": lastModified, "cache-control": "public, max-age=300" };

  const app = new Elysia({ aot: true })
    .use(
      openapi({
        path: "/openapi",
        documentation: {
          info: { title: "a2a-node", version: o.version, description: "A2A v1.0 over JSON-RPC and HTTP+JSON, behind mutual TLS." },
          // Neither binding reaches Elysia (see request-router.ts): they are described by hand. Each HTTP+JSON
          // route also answers under a /{tenant} prefix.
          paths: BINDING_PATHS,
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
      "/health",
      ({ caller }) => ({
        status: "ok",
        name: o.card.name,
        version: o.version,
        executor: o.executor,
        uptimeSeconds: Math.round((Date.now() - o.startedAt) / 1000),
        caller: caller?.name,
      }),
      { detail: { summary: "Liveness, and who the node thinks you are" } },
    )
    .get(
      "/health/ready",
      async () => {
        const r = await o.ready(AbortSignal.timeout(2000)).catch((err) => ({ ready: false, detail: String(err) }));
        return new Response(JSON.stringify({ ...r, executor: o.executor }), { status: r.ready ? 200 : 503, headers: { "content-type": "application/json" } });
      },
      { detail: { summary: "Readiness: whether the model endpoint behind the executor answers (503 if not)" } },
    );

  return {
    app,
    handle(request: Request, caller: CallerIdentity): Promise<Response> {
      callers.set(request, caller);
      return app.handle(request);
    },
  };
}
