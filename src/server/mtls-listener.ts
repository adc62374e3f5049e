import { bindServer } from "./bind";
import { createServer as createTlsServer, type TLSSocket } from "node:tls";
import type { CallerIdentity } from "../rpc/caller";
import {
  boundTlsServer,
  CONNECTION_DEFAULTS,
  type ConnectionLimits,
  type RefusedConnection,
} from "./connection-limits";
import { ConnectionSet, type HttpLimits, type HttpRequest, type HttpResponse } from "./http1";
import type { RevocationLookup } from "../../pki/fleet-member";
import { peerIdentifier } from "./peer-identity";
import type { Http2Handoff } from "./http2-handoff";

export interface MtlsListenerOptions {
  /** Head size, idle and request timeouts per connection (HTTP_DEFAULTS when absent). */
  http?: HttpLimits;
  host: string;
  port: number;
  /** PEM: this node's certificate and key, and the fleet CA that client certificates must chain to. */
  cert: string;
  key: string;
  ca: string;
  maxBodyBytes: number;
  /** Called for every HTTP request, with the identity proven by the connection's client certificate. */
  onRequest(req: HttpRequest, caller: CallerIdentity): Promise<HttpResponse>;
  /** The answer to a body over maxBodyBytes. */
  tooLarge(limit: number, declared: number | undefined, target: string): HttpResponse;
  /**
   * Called when a TLS handshake fails (no certificate, foreign CA, expired...) or its certificate is refused;
   * `peer` is the refused certificate's CN and fingerprint when the handshake got as far as reading one.
   */
  onHandshakeError?(err: Error, remote: string | undefined, peer?: RefusedPeer): void;
  /** A client that has not finished its TLS handshake after this long is dropped. */
  handshakeTimeoutMs?: number;
  /** Connections held open (handshakes in progress included): in all, per source, unauthenticated. */
  limits?: ConnectionLimits;
  /** Called when a connection is closed at once for being over the limits. */
  onRefusedConnection?(reason: RefusedConnection, remote: string | undefined): void;
  /** The fleet's revocation list: a client certificate on it is refused at the connection. */
  revoked?: RevocationLookup;
  /**
   * The one answer a connection whose certificate is revoked gets before it is closed (so its holder reads why,
   * and can fetch the list that says so); without it such a connection is closed at once, as other refusals are.
   */
  answerRevoked?(req: HttpRequest, reason: string, name: string): Promise<HttpResponse>;
  /** Called for each request the HTTP loop refuses itself (malformed, too slow, too large), by status. */
  onRefusedRequest?(status: number): void;
  /**
   * Where HTTP/2 connections go (the gRPC binding): with it, the listener offers ALPN `h2` beside `http/1.1`
   * on the same port and hands a connection that chose `h2` over once its certificate is verified.
   */
  http2?: Http2Handoff;
}

/** Whose certificate a refused connection presented (its CN as written, which need not be a fleet name). */
export interface RefusedPeer {
  name: string;
  fingerprint: string;
}

export interface Listener {
  url: string;
  port: number;
  /** Uses a new certificate and key (and CA) for connections from now on; open ones keep theirs. */
  setIdentity?(pem: { cert: string; key: string; ca: string }): void;
  /**
   * Closes open connections whose client certificate (or bearer token) is now revoked, HTTP/2 ones (and every
   * call on them) included; returns how many.
   */
  dropRevoked?(): number;
  /** Stops taking new connections; open ones keep working (so blocking calls can still be answered). */
  stopAccepting(): void;
  /** Closes every connection. */
  close(): Promise<void>;
  /** Connections open now (handshakes in progress included), where the listener counts them. */
  openConnections?(): number;
  /** Of those, the ones not authenticated yet (a handshake in progress; on the token listener, no valid token yet). */
  unauthenticatedConnections?(): number;
}

/**
 * HTTPS with mandatory client certificates, on node:tls because it is the one server API under Bun that can
 * tell who the client is (Bun.serve and node:https cannot expose the peer certificate). The TLS server
 * verifies the certificate against the fleet CA during the handshake; the identity is read once per
 * connection from the socket and handed to every request on it. No header can set or change it.
 */
export function listenMtls(options: MtlsListenerOptions): Promise<Listener> {
  const connections = new ConnectionSet(options.http);
  const tls = createTlsServer({
    cert: options.cert,
    key: options.key,
    ca: options.ca,
    requestCert: true,
    rejectUnauthorized: true,
    minVersion: "TLSv1.2",
    // Node's default gives a silent client 120 s; a legitimate peer finishes in milliseconds.
    handshakeTimeout: options.handshakeTimeoutMs ?? CONNECTION_DEFAULTS.handshakeTimeoutMs,
    // One port for both: the client's ALPN says which; a client that offers none speaks HTTP/1.1.
    ...(options.http2 ? { ALPNProtocols: ["h2", "http/1.1"] } : {}),
  });
  const gate = boundTlsServer(tls, options);
  let identify = peerIdentifier(options.ca, options.revoked);
  // Each open connection's certificate serial, so a revocation can end the connections already made with it.
  const serials = new Map<TLSSocket, { serial: string; peer: RefusedPeer }>();
  tls.on("secureConnection", (socket: TLSSocket) => {
    const peer = identify(socket);
    if ("refused" in peer) {
      const who = presented(socket);
      options.onHandshakeError?.(new Error(`client certificate refused: ${peer.refused}`), socket.remoteAddress, who);
      // The answer that says why is an HTTP/1.1 one; an HTTP/2 client learns it from the handshake log only.
      if (peer.revoked && options.answerRevoked && socket.alpnProtocol !== "h2")
        answerOnce(socket, peer.refused, who?.name ?? "", options.answerRevoked);
      else socket.destroy();
      return;
    }
    const { caller } = peer;
    // A fleet member: its connection is no longer one a stranger's new connection may take the place of.
    gate.authenticated(socket);
    serials.set(socket, { serial: peer.serial, peer: { name: caller.name, fingerprint: caller.fingerprint } });
    socket.on("close", () => serials.delete(socket));
    // HTTP/2 (gRPC): the same verified caller, tagged on the socket before any stream on it is read.
    if (options.http2 && socket.alpnProtocol === "h2") return options.http2.accept(socket, caller);
    connections.serve(socket, {
      maxBodyBytes: options.maxBodyBytes,
      tooLarge: options.tooLarge,
      handle: (req) => options.onRequest(req, caller),
      onRefused: options.onRefusedRequest,
    });
  });

  /** One request of a revoked certificate's connection is answered (its body read and dropped), then it closes. */
  const answerOnce = (
    socket: TLSSocket,
    reason: string,
    name: string,
    answer: NonNullable<MtlsListenerOptions["answerRevoked"]>,
  ) => {
    const connection = connections.serve(socket, {
      maxBodyBytes: options.maxBodyBytes,
      tooLarge: options.tooLarge,
      handle: (req) => {
        connection.closeWhenIdle();
        return answer(req, reason, name);
      },
      onRefused: options.onRefusedRequest,
    });
  };

  const open = {
    close: async () => {
      await Promise.all([connections.close(), options.http2?.close()]);
    },
  };
  return bindServer(tls, options.port, options.host, "https", open).then((bound) => ({
    ...bound,
    setIdentity: (pem) => {
      tls.setSecureContext({ cert: pem.cert, key: pem.key, ca: pem.ca, minVersion: "TLSv1.2" });
      // Members are judged against the CA now in use, not the one the listener started with.
      identify = peerIdentifier(pem.ca, options.revoked);
    },
    dropRevoked: () => {
      let dropped = 0;
      for (const [socket, { serial, peer }] of serials) {
        const at = options.revoked?.(serial);
        if (!at) continue;
        options.onHandshakeError?.(
          new Error(`closed an open connection: its certificate (serial ${serial}) was revoked on ${at.toISOString()}`),
          socket.remoteAddress,
          peer,
        );
        socket.destroy();
        dropped++;
      }
      return dropped;
    },
    openConnections: () => gate.count(),
    unauthenticatedConnections: () => gate.handshakes(),
  }));
}

/** The CN and fingerprint of the certificate a client presented, if it presented one. */
function presented(socket: TLSSocket): RefusedPeer | undefined {
  const cert = socket.getPeerCertificate();
  if (!cert || !cert.fingerprint256) return undefined;
  const cn = cert.subject?.CN;
  return { name: Array.isArray(cn) ? cn.join("+") : String(cn ?? ""), fingerprint: cert.fingerprint256 };
}
