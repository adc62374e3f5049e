import { createServer as createTlsServer, type TLSSocket } from "node:tls";
import type { AddressInfo } from "node:net";
import { boundTlsServer, CONNECTION_DEFAULTS, type ConnectionLimits, type RefusedConnection } from "./connection-limits";
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
  boundTlsServer(tls, options);
  tls.on("secureConnection", (socket: TLSSocket) => {
    connections.serve(socket, { maxBodyBytes: options.maxBodyBytes, tooLarge: options.tooLarge, handle: (req) => options.onRequest(req, socket.remoteAddress) });
  });
  return new Promise((resolve, reject) => {
    tls.once("error", reject);
    tls.listen(options.port, options.host, () => {
      tls.off("error", reject);
      const port = (tls.address() as AddressInfo).port;
      const host = options.host.includes(":") ? `[${options.host}]` : options.host;
      resolve({
        url: `https://${host}:${port}`,
        port,
        setIdentity: (pem) => tls.setSecureContext({ cert: pem.cert, key: pem.key, minVersion: "TLSv1.2" }),
        stopAccepting: () => void tls.close(),
        close: async () => {
          if (tls.listening) tls.close();
          await connections.close();
        },
      });
    });
  });
}
