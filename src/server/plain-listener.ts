import { bindServer } from "./bind";
import { createServer, type Socket } from "node:net";
import { boundServer, CONNECTION_DEFAULTS, type RefusedConnection } from "./connection-limits";
import type { CallerIdentity } from "../rpc/caller";
import { refuseBrowserRequest } from "./browser-guard";
import { ConnectionSet, HTTP_DEFAULTS, type HttpLimits, type HttpRequest, type HttpResponse } from "./http1";
import type { Listener } from "./mtls-listener";
import { sniffPreface, type Http2Handoff } from "./http2-handoff";

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
  /**
   * Where h2c connections go (the gRPC binding, for local tools and the conformance kit): a connection whose
   * first bytes are the HTTP/2 preface is handed over, as LOOPBACK_CALLER; any other stays HTTP/1.1.
   */
  http2?: Http2Handoff;
}

/**
 * A plain-HTTP listener for tools on this machine that cannot present a client certificate (the A2A
 * conformance kit, local scripts). It binds 127.0.0.1 only, never another address: without TLS there is no
 * identity, so every caller is LOOPBACK_CALLER and sees only the tasks made through this listener.
 */
export function listenPlainLoopback(options: PlainListenerOptions): Promise<Listener> {
  const connections = new ConnectionSet(options.http);
  const handle = async (req: HttpRequest) => refuseBrowserRequest(req) ?? options.onRequest(req, LOOPBACK_CALLER);
  const serve1 = (socket: Socket) =>
    connections.serve(socket, {
      maxBodyBytes: options.maxBodyBytes,
      tooLarge: options.tooLarge,
      handle,
      onRefused: options.onRefusedRequest,
    });
  const { http2 } = options;
  const server = createServer((socket) => {
    if (socket.destroyed) return;
    if (!http2) return void serve1(socket);
    sniffPreface(socket, (options.http ?? HTTP_DEFAULTS).headTimeoutMs, (h2) => {
      if (h2) http2.accept(socket, LOOPBACK_CALLER);
      else serve1(socket);
      socket.resume();
    });
  });
  // Capped like every listener: one local process's thousands of idle connections must not take the
  // descriptors the mutual-TLS port needs.
  const max = options.maxConnections ?? CONNECTION_DEFAULTS.maxConnections;
  const gate = boundServer(server, {
    limits: { maxConnections: max, maxConnectionsPerAddress: Number.MAX_SAFE_INTEGER },
    onRefusedConnection: options.onRefusedConnection,
  });
  const open = {
    close: async () => {
      await Promise.all([connections.close(), http2?.close()]);
    },
  };
  return bindServer(server, options.port, "127.0.0.1", "http", open).then((bound) => {
    return { ...bound, openConnections: () => gate.count() };
  });
}
