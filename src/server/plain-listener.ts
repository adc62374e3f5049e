import { bindServer } from "./bind";
import { createServer } from "node:net";
import { boundServer, CONNECTION_DEFAULTS, type RefusedConnection } from "./connection-limits";
import type { CallerIdentity } from "../rpc/caller";
import { refuseBrowserRequest } from "./browser-guard";
import { ConnectionSet, type HttpLimits, type HttpRequest, type HttpResponse } from "./http1";
import type { Listener } from "./mtls-listener";

/**
 * Everyone on a plain loopback listener is one caller: the machine itself. Its name owns that listener's
 * tasks, so no certificate may ever produce it: it starts with "@", which no node name can contain (a peer's
 * name is checked against pki/names.ts at the connection), and "local" is a reserved node name besides.
 */
export const LOOPBACK_CALLER: CallerIdentity = { name: "@local", fingerprint: "plain-http-loopback", anonymous: true };

export interface PlainListenerOptions {
  /** Head size, idle and request timeouts per connection (HTTP_DEFAULTS when absent). */
  http?: HttpLimits;
  port: number;
  maxBodyBytes: number;
  onRequest(req: HttpRequest, caller: CallerIdentity): Promise<HttpResponse>;
  tooLarge(limit: number, declared: number | undefined, target: string): HttpResponse;
  /** Called for each request the HTTP loop refuses itself (malformed, too slow, too large), by status. */
  onRefusedRequest?(status: number): void;
  /**
   * Connections held open at once (default max_connections' default); more are closed at once (every caller is this
   * machine: none is evicted).
   */
  maxConnections?: number;
  onRefusedConnection?(reason: RefusedConnection, remote: string | undefined): void;
}

/**
 * A plain-HTTP listener for tools on this machine that cannot present a client certificate (the A2A
 * conformance kit, local scripts). It binds 127.0.0.1 only, never another address: without TLS there is no
 * identity, so every caller is LOOPBACK_CALLER and sees only the tasks made through this listener.
 */
export function listenPlainLoopback(options: PlainListenerOptions): Promise<Listener> {
  const connections = new ConnectionSet(options.http);
  const handle = async (req: HttpRequest) => refuseBrowserRequest(req) ?? options.onRequest(req, LOOPBACK_CALLER);
  const server = createServer((socket) => {
    if (!socket.destroyed)
      connections.serve(socket, {
        maxBodyBytes: options.maxBodyBytes,
        tooLarge: options.tooLarge,
        handle,
        onRefused: options.onRefusedRequest,
      });
  });
  // Capped like every listener: one local process's thousands of idle connections must not take the
  // descriptors the mutual-TLS port needs.
  const max = options.maxConnections ?? CONNECTION_DEFAULTS.maxConnections;
  const gate = boundServer(server, {
    limits: { maxConnections: max, maxConnectionsPerAddress: Number.MAX_SAFE_INTEGER },
    onRefusedConnection: options.onRefusedConnection,
  });
  return bindServer(server, options.port, "127.0.0.1", "http", connections).then((bound) => {
    return { ...bound, openConnections: () => gate.count() };
  });
}
