import { bindServer } from "./bind";
import { createServer as createNetServer, type Server as NetServer, type Socket } from "node:net";
import { createServer as createTlsServer, type TLSSocket } from "node:tls";
import { TOKEN_CALLER_PREFIX, type CallerToken } from "../auth/caller-tokens";
import type { CallerIdentity } from "../rpc/caller";
import {
  boundServer,
  boundTlsServer,
  CONNECTION_DEFAULTS,
  type ConnectionGate,
  type ConnectionLimits,
  type RefusedConnection,
} from "./connection-limits";
import { ConnectionSet, type HttpLimits, type HttpRequest, type HttpResponse } from "./http1";
import type { Listener } from "./mtls-listener";

/**
 * Why a request had no caller: no Authorization header, one that is not a bearer token, or a token this node
 * does not hold. A revoked token is forgotten (only hashes of live tokens are kept), so it cannot be told from
 * one never issued: both are `unknown_token`, never `revoked`.
 */
export type UnauthorizedKind = "no_token" | "bad_token" | "unknown_token";

/** The card is public: a caller reads it to learn that this listener wants a bearer token. */
const PUBLIC_PATHS = new Set(["/.well-known/agent-card.json"]);

/** Who reads the public card: nobody in particular, and never an owner of tasks (no A2A route is open to it). */
const CARD_READER: CallerIdentity = { name: "@card-reader", fingerprint: "none", anonymous: true };

export interface TokenListenerOptions {
  http?: HttpLimits;
  host: string;
  port: number;
  /** Serve TLS with the node's own certificate (no client certificate asked); absent: plain HTTP. */
  tls?: { cert: string; key: string };
  maxBodyBytes: number;
  /** The caller a bearer token belongs to (read at each request, so an added or revoked token counts at once). */
  verify(token: string): CallerToken | undefined;
  /** Every token that is valid now (see dropRevoked). */
  current?(): CallerToken[];
  /** A connection closed because a token it was used with is revoked (see dropRevoked). */
  onDropped?(caller: string, remote: string | undefined): void;
  onRequest(req: HttpRequest, caller: CallerIdentity): Promise<HttpResponse>;
  tooLarge(limit: number, declared: number | undefined, target: string): HttpResponse;
  onRefusedRequest?(status: number): void;
  /** A request without a valid token (logged without the token), and what kind of refusal it was. */
  onUnauthorized?(reason: string, remote: string | undefined, kind: UnauthorizedKind): void;
  handshakeTimeoutMs?: number;
  limits?: ConnectionLimits;
  onHandshakeError?(err: Error, remote: string | undefined): void;
  onRefusedConnection?(reason: RefusedConnection, remote: string | undefined): void;
}

/**
 * A listener for A2A callers outside the fleet, who prove who they are with a bearer token
 * (`Authorization: Bearer TOKEN`, from `a2a-node tokens add NAME`) instead of a client certificate. The
 * token's name, prefixed "token:", is the caller: it owns the tasks made with it exactly as a certificate's
 * CN does on the mutual-TLS listener, and the request goes to the same router. Only the agent card is
 * served without a token; everything else without a valid one is 401 with WWW-Authenticate.
 */
export function listenToken(options: TokenListenerOptions): Promise<Listener> {
  const connections = new ConnectionSet(options.http);
  let gate: ConnectionGate;
  // The token callers each open connection has made requests as, so a revoked token's connections (and the
  // streams on them) can be ended, as a revoked certificate's are.
  const callers = new Map<Socket, Map<string, string>>();
  const handle = async (req: HttpRequest, socket: Socket): Promise<HttpResponse> => {
    const remote = socket.remoteAddress;
    const q = req.target.indexOf("?");
    const path = q === -1 ? req.target : req.target.slice(0, q);
    if ((req.method === "GET" || req.method === "HEAD") && PUBLIC_PATHS.has(path))
      return options.onRequest(req, CARD_READER);
    const auth = bearerToken(req.headers.get("authorization"));
    if (auth.kind !== "token") {
      if (auth.kind === "none") options.onUnauthorized?.("no bearer token", remote, "no_token");
      else options.onUnauthorized?.("not a bearer token", remote, "bad_token");
      return unauthorized(
        auth.kind === "none" ? undefined : "invalid_request",
        "send 'Authorization: Bearer TOKEN' (a token from 'a2a-node tokens add NAME' on this node)",
      );
    }
    const found = options.verify(auth.token);
    if (!found) {
      options.onUnauthorized?.(
        "a bearer token this node does not hold (never issued, mistyped, or revoked)",
        remote,
        "unknown_token",
      );
      return unauthorized("invalid_token", "the bearer token is not one this node knows (unknown, or revoked)");
    }
    // A caller with a valid token: its connection is no longer one a stranger's new connection may replace.
    gate.authenticated(socket);
    const caller = {
      name: `${TOKEN_CALLER_PREFIX}${found.name}`,
      fingerprint: fingerprintOf(found),
      outsideFleet: true,
    };
    let used = callers.get(socket);
    if (!used) {
      callers.set(socket, (used = new Map()));
      socket.once("close", () => callers.delete(socket));
    }
    used.set(caller.fingerprint, caller.name);
    return options.onRequest(req, caller);
  };
  const serve = (socket: Socket) => {
    if (socket.destroyed) return;
    connections.serve(socket, {
      maxBodyBytes: options.maxBodyBytes,
      tooLarge: options.tooLarge,
      handle: (req) => handle(req, socket),
      onRefused: options.onRefusedRequest,
    });
  };
  /** Closes every connection a token that is no longer valid was used on (its streams end with it). */
  const dropRevoked = (): number => {
    if (!options.current) return 0;
    const valid = new Set(options.current().map(fingerprintOf));
    let dropped = 0;
    for (const [socket, used] of callers) {
      const gone = [...used].find(([fingerprint]) => !valid.has(fingerprint));
      if (!gone) continue;
      options.onDropped?.(gone[1], socket.remoteAddress);
      socket.destroy();
      dropped++;
    }
    return dropped;
  };

  let server: NetServer;
  let setIdentity: Listener["setIdentity"];
  if (options.tls) {
    const tls = createTlsServer({
      cert: options.tls.cert,
      key: options.tls.key,
      minVersion: "TLSv1.2",
      handshakeTimeout: options.handshakeTimeoutMs ?? CONNECTION_DEFAULTS.handshakeTimeoutMs,
    });
    gate = boundTlsServer(tls, options);
    tls.on("secureConnection", (socket: TLSSocket) => serve(socket));
    server = tls;
    setIdentity = (pem) => tls.setSecureContext({ cert: pem.cert, key: pem.key, minVersion: "TLSv1.2" });
  } else {
    server = createNetServer(serve);
    gate = boundServer(server, options);
  }

  return bindServer(server, options.port, options.host, options.tls ? "https" : "http", connections).then((bound) => ({
    ...bound,
    setIdentity,
    dropRevoked,
    openConnections: () => gate.count(),
    unauthenticatedConnections: () => gate.handshakes(),
  }));
}

/** What tells one token from another of the same name (a token revoked and made again is another caller). */
function fingerprintOf(token: CallerToken): string {
  return `${TOKEN_CALLER_PREFIX}${token.name}@${token.createdAt}`;
}

/** The token of an `Authorization: Bearer TOKEN` header (the scheme is case-insensitive, RFC 7235). */
function bearerToken(
  header: string | undefined,
): { kind: "token"; token: string } | { kind: "none" } | { kind: "other" } {
  if (header === undefined || header.trim() === "") return { kind: "none" };
  const m = /^bearer[ \t]+([^\s]+)[ \t]*$/i.exec(header.trim());
  return m ? { kind: "token", token: m[1] } : { kind: "other" };
}

/**
 * 401 with the challenge RFC 6750 describes (error="invalid_token" when a token was sent and refused), and a
 * google.rpc.Status body a person or either binding's client can read.
 */
function unauthorized(error: string | undefined, message: string): HttpResponse {
  return {
    status: 401,
    headers: {
      "content-type": "application/json",
      "www-authenticate": `Bearer realm="a2a-node"${error ? `, error="${error}"` : ""}`,
    },
    body: JSON.stringify({ error: { code: 401, status: "UNAUTHENTICATED", message } }),
  };
}
