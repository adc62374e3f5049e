import { Elysia } from "elysia";
import { openapi } from "@elysiajs/openapi";
import type { CallerIdentity } from "../protocol/caller";
import type { AgentCard } from "../protocol/types";

export interface WebAppOptions {
  /** The card, read on first request (it names the listener's port, known only once listening). */
  card: () => AgentCard;
  version: string;
  executor: string;
  startedAt: number;
}

/**
 * The node's HTTP surface apart from JSON-RPC: the agent card, health, and the OpenAPI description. Elysia
 * is only this adapter; the protocol core does not know it exists. The verified caller reaches handlers
 * through `callerOf`, keyed by the Request object, never through a header.
 */
export function createWebApp(o: WebAppOptions) {
  const callers = new WeakMap<Request, CallerIdentity>();
  let cardJson: string | undefined;

  const app = new Elysia({ aot: true })
    .use(
      openapi({
        path: "/openapi",
        documentation: {
          info: { title: "a2a-node", version: o.version, description: "A2A v1.0 over JSON-RPC, behind mutual TLS." },
          // JSON-RPC POSTs never reach Elysia (see request-router.ts), so they are described here by hand.
          paths: {
            "/": {
              post: {
                summary: "A2A v1.0 JSON-RPC: SendMessage, GetTask, ListTasks, CancelTask",
                description: "Send header A2A-Version: 1.0. Errors travel in the JSON-RPC body with HTTP 200.",
                parameters: [{ name: "A2A-Version", in: "header", required: true, schema: { type: "string", enum: ["1.0"] } }],
                requestBody: { required: true, content: { "application/json": { schema: { type: "object", required: ["jsonrpc", "method"] } } } },
                responses: { "200": { description: "A JSON-RPC response" }, "413": { description: "Body over --max-body" } },
              },
            },
          },
        },
      }),
    )
    .derive(({ request }) => ({ caller: callers.get(request) }))
    .get(
      "/.well-known/agent-card.json",
      () => new Response((cardJson ??= JSON.stringify(o.card())), { headers: { "content-type": "application/json" } }),
      { detail: { summary: "The A2A agent card" } },
    )
    .get(
      "/health",
      ({ caller }) => ({
        status: "ok",
        name: o.card().name,
        version: o.version,
        executor: o.executor,
        uptimeSeconds: Math.round((Date.now() - o.startedAt) / 1000),
        caller: caller?.name,
      }),
      { detail: { summary: "Liveness, and who the node thinks you are" } },
    );

  return {
    app,
    handle(request: Request, caller: CallerIdentity): Promise<Response> {
      callers.set(request, caller);
      return app.handle(request);
    },
  };
}
