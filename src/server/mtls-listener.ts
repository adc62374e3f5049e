import { createServer as createHttpServer, type IncomingMessage, type ServerResponse } from "node:http";
import { createServer as createTlsServer, type TLSSocket } from "node:tls";
import type { AddressInfo } from "node:net";
import type { CallerIdentity } from "../protocol/caller";

export interface MtlsListenerOptions {
  host: string;
  port: number;
  /** PEM: this node's certificate and key, and the fleet CA that client certificates must chain to. */
  cert: string;
  key: string;
  ca: string;
  /** Called for every HTTP request, with the identity proven by the connection's client certificate. */
  onRequest(req: IncomingMessage, res: ServerResponse, caller: CallerIdentity): void;
  /** Called when a TLS handshake fails (no certificate, foreign CA, expired...). */
  onHandshakeError?(err: Error, remote: string | undefined): void;
}

export interface Listener {
  url: string;
  port: number;
  /** Stops taking new connections; open ones keep working (so blocking calls can still be answered). */
  stopAccepting(): void;
  /** Closes every connection. */
  close(): Promise<void>;
}

/**
 * HTTPS with mandatory client certificates, on node:tls because it is the one server API under Bun that can
 * tell who the client is (Bun.serve and node:https cannot expose the peer certificate). The TLS server
 * verifies the certificate against the fleet CA during the handshake, then hands the socket to a plain HTTP
 * server. The identity is read once per connection from the socket and travels beside each request; no
 * header can set or change it.
 */
export function listenMtls(options: MtlsListenerOptions): Promise<Listener> {
  const identities = new WeakMap<object, CallerIdentity>();
  const http = createHttpServer({ keepAlive: true, keepAliveTimeout: 65_000 }, (req, res) => {
    const caller = identities.get(req.socket);
    if (!caller) {
      // Cannot happen through the TLS server below; refuse rather than run as nobody.
      res.writeHead(403).end();
      return;
    }
    options.onRequest(req, res, caller);
  });
  http.headersTimeout = 30_000;
  http.requestTimeout = 0; // long blocking SendMessage calls are legitimate; tasks are never cut by a timer

  const tls = createTlsServer({
    cert: options.cert,
    key: options.key,
    ca: options.ca,
    requestCert: true,
    rejectUnauthorized: true,
    minVersion: "TLSv1.2",
  });
  tls.on("secureConnection", (socket: TLSSocket) => {
    const peer = socket.getPeerCertificate();
    const name = peer?.subject?.CN;
    if (!socket.authorized || !name || Array.isArray(name)) {
      socket.destroy();
      return;
    }
    identities.set(socket, { name, fingerprint: peer.fingerprint256 });
    http.emit("connection", socket);
  });
  tls.on("tlsClientError", (err, socket) => options.onHandshakeError?.(err, socket.remoteAddress));

  return new Promise((resolve, reject) => {
    tls.once("error", reject);
    tls.listen(options.port, options.host, () => {
      tls.off("error", reject);
      const port = (tls.address() as AddressInfo).port;
      const host = options.host.includes(":") ? `[${options.host}]` : options.host;
      resolve({
        url: `https://${host}:${port}`,
        port,
        stopAccepting: () => void tls.close(),
        close: () =>
          new Promise<void>((done) => {
            if (tls.listening) tls.close(() => done());
            else done();
            http.closeAllConnections();
          }),
      });
    });
  });
}
