import { bindServer } from "./bind";
import { createServer } from "node:net";
import { boundServer, type RefusedConnection } from "./connection-limits";
import { refuseBrowserRequest } from "./browser-guard";
import { ConnectionSet, type HttpResponse } from "./http1";
import type { Listener } from "./mtls-listener";
import { OPS_PATHS } from "./ops-routes";

/** A Prometheus and a health checker need a connection or two; the rest is room for a few more tools. */
export const ADMIN_MAX_CONNECTIONS = 64;

export interface AdminListenerOptions {
  port: number;
  /** Connections held open at once (default ADMIN_MAX_CONNECTIONS); more are closed at once. */
  maxConnections?: number;
  onRefusedConnection?(reason: RefusedConnection, remote: string | undefined): void;
  /** Health and metrics (ops-routes.ts); undefined for anything else. */
  ops(method: string, path: string): Promise<HttpResponse> | undefined;
}

/**
 * The admin port: /metrics and /health/* over plain HTTP on 127.0.0.1, for a Prometheus or a health checker on
 * this machine, which has no client certificate. Nothing else is served here (no A2A, no agent card, no
 * OpenAPI): what it shows is counts and states, never a task. It binds loopback only, and refuses what a web
 * page could send it (another Origin, a foreign Host: DNS rebinding), as the plain A2A listener does.
 */
export function listenAdmin(options: AdminListenerOptions): Promise<Listener> {
  const connections = new ConnectionSet();
  const server = createServer((socket) => {
    if (socket.destroyed) return;
    connections.serve(socket, {
      maxBodyBytes: 1024,
      tooLarge: () => notFound(),
      handle: async (req) => {
        const refused = refuseBrowserRequest(req);
        if (refused) return refused;
        const q = req.target.indexOf("?");
        return (await options.ops(req.method, q === -1 ? req.target : req.target.slice(0, q))) ?? notFound();
      },
    });
  });
  const max = options.maxConnections ?? ADMIN_MAX_CONNECTIONS;
  const gate = boundServer(server, {
    limits: { maxConnections: max, maxConnectionsPerAddress: Number.MAX_SAFE_INTEGER },
    onRefusedConnection: options.onRefusedConnection,
  });
  return bindServer(server, options.port, "127.0.0.1", "http", { close: () => connections.close(500) }).then(
    (bound) => {
      return { ...bound, openConnections: () => gate.count() };
    },
  );
}

function notFound(): HttpResponse {
  return {
    status: 404,
    headers: { "content-type": "text/plain; charset=utf-8" },
    body: `not found: the admin port serves only GET ${OPS_PATHS.join(", ")}\n`,
  };
}
