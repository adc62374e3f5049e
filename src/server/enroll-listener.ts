import { bindServer } from "./bind";
import { createServer as createTlsServer, type TLSSocket } from "node:tls";
import {
  boundTlsServer,
  CONNECTION_DEFAULTS,
  type ConnectionLimits,
  type RefusedConnection,
} from "./connection-limits";
import { ConnectionSet, type HttpLimits, type HttpRequest, type HttpResponse } from "./http1";
import type { Listener } from "./mtls-listener";

export interface EnrollListenerOptions {
  host: string;
  port: number;
  /** This node's certificate and key: a joining machine checks them against the CA fingerprint it was given. */
  cert: string;
  key: string;
  maxBodyBytes: number;
  /** Called for every request with the client's address; no caller identity exists on this port. */
  onRequest(req: HttpRequest, remote: string | undefined): Promise<HttpResponse>;
  tooLarge(limit: number, declared: number | undefined): HttpResponse;
  handshakeTimeoutMs?: number;
  limits?: ConnectionLimits;
  /** Head size and timeouts of the HTTP loop, as on the other listeners. */
  http?: HttpLimits;
  onHandshakeError?(err: Error, remote: string | undefined): void;
  onRefusedConnection?(reason: RefusedConnection, remote: string | undefined): void;
}

/**
 * The enrollment port: TLS without client certificates, for machines that have none yet. It is a listener of
 * its own rather than a route on the mutual-TLS port, so that port keeps refusing every client without a fleet
 * certificate in the handshake, on every route, with no exception to get wrong. Here only the enrollment
 * routes answer (src/fleet/enroll-service.ts); nothing of A2A is reachable.
 */
export function listenEnroll(options: EnrollListenerOptions): Promise<Listener> {
  const connections = new ConnectionSet(options.http);
  const tls = createTlsServer({
    cert: options.cert,
    key: options.key,
    requestCert: false,
    minVersion: "TLSv1.2",
    handshakeTimeout: options.handshakeTimeoutMs ?? CONNECTION_DEFAULTS.handshakeTimeoutMs,
  });
  // Nobody authenticates here: every connection stays evictable, so a flood evicts its own oldest first.
  const gate = boundTlsServer(tls, options);
  tls.on("secureConnection", (socket: TLSSocket) => {
    connections.serve(socket, {
      maxBodyBytes: options.maxBodyBytes,
      tooLarge: options.tooLarge,
      handle: (req) => options.onRequest(req, socket.remoteAddress),
    });
  });
  return bindServer(tls, options.port, options.host, "https", connections).then((bound) => ({
    ...bound,
    setIdentity: (pem) => tls.setSecureContext({ cert: pem.cert, key: pem.key, minVersion: "TLSv1.2" }),
    openConnections: () => gate.count(),
    unauthenticatedConnections: () => gate.handshakes(),
  }));
}
