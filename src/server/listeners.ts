import { hostname } from "node:os";
import { isIP } from "node:net";
import type { CallerToken } from "../auth/caller-tokens";
import type { ServeConfig } from "../config";
import type { Logger } from "../log";
import type { CallerIdentity } from "../rpc/caller";
import type { AgentCard } from "../protocol/types";
import { VERSION } from "../version";
import { listenAdmin } from "./admin-listener";
import type { AuditTrail } from "./audit-trail";
import type { CardAudience } from "./card-signing";
import type { ConnectionLimits } from "./connection-limits";
import type { EnrollListenerOptions } from "./enroll-listener";
import type { HttpLimits, HttpRequest, HttpResponse } from "./http1";
import type { ListenerCaps } from "./listener-caps";
import type { Http2Handoff } from "./http2-handoff";
import { listenMtls, type Listener, type MtlsListenerOptions } from "./mtls-listener";
import { LOOPBACK_CALLER, listenPlainLoopback } from "./plain-listener";
import { tooLargeResponse } from "./request-router";
import { listenToken } from "./token-listener";

/*
 * The node's five listeners, one function each: what each opens, with what identity, and what it serves. The
 * composition root (node.ts) hands every one the same kit and adds what only that listener needs.
 */

type OnRequest = (req: HttpRequest, caller: CallerIdentity) => Promise<HttpResponse>;

/** What every listener is opened with. */
export interface ListenerKit {
  config: ServeConfig;
  log: Logger;
  /** Each listener's connection caps, fitted under the file descriptor limit. */
  caps: ListenerCaps;
  audit: AuditTrail;
  /** Counts each refused request of the HTTP loop (malformed, too slow, too large), by status. */
  onRefusedRequest(status: number): void;
  /** Reports a bound listener's connections to the metrics. */
  track(listener: string, l: Listener, max: ConnectionLimits): void;
  /**
   * The request router for one listener, in front of its web surface (which serves `card`); `pki`: with the
   * fleet PKI's routes (/pki/), `ops`: with health and metrics.
   */
  route(card: () => Promise<AgentCard>, serves: { pki: boolean; ops: boolean }): OnRequest;
  card(url: string, audience: CardAudience): Promise<AgentCard>;
  /**
   * A fresh hand-off to the gRPC binding's HTTP/2 server, one per listener that serves gRPC (the mutual-TLS one
   * by ALPN, the plain loopback one by the h2c preface); absent: no listener serves gRPC.
   */
  http2?(): Http2Handoff;
}

/** A listener bound, and the URL it is reached at. */
export interface Opened {
  listener: Listener;
  url: string;
}

function cap(kit: ListenerKit, listener: keyof ListenerCaps): ConnectionLimits {
  return kit.caps[listener] ?? kit.caps.mtls;
}

function common(kit: ListenerKit) {
  const c = kit.config;
  return {
    maxBodyBytes: c.maxBodyBytes,
    tooLarge: tooLargeResponse,
    onRefusedRequest: (status: number) => kit.onRefusedRequest(status),
    http: {
      maxHeadBytes: c.maxHeadBytes,
      idleTimeoutMs: c.idleTimeoutMs,
      headTimeoutMs: c.requestTimeoutMs,
    } satisfies HttpLimits,
  };
}

/**
 * The mutual-TLS listener: fleet members, known by their client certificate; it serves the fleet PKI's routes
 * (/pki/) too, since only there do callers hold a fleet certificate. Returns its advertised URL as well.
 */
export async function openMtlsListener(
  kit: ListenerKit,
  o: { identity: { certPem: string; keyPem: string; caPem: string; sans: string[]; name: string } } & Pick<
    MtlsListenerOptions,
    "revoked" | "answerRevoked"
  >,
): Promise<Opened & { advertisedUrl: string }> {
  const { config } = kit;
  let advertisedUrl = "";
  const mtls = await listenMtls({
    ...common(kit),
    host: config.host,
    port: config.port,
    cert: o.identity.certPem,
    key: o.identity.keyPem,
    ca: o.identity.caPem,
    onRequest: kit.route(() => kit.card(advertisedUrl, "mtls"), { pki: true, ops: true }),
    revoked: o.revoked,
    answerRevoked: o.answerRevoked,
    onHandshakeError: (err, remote, peer) => kit.audit.refused(err.message, remote, peer),
    onRefusedConnection: (reason, remote) => kit.audit.refused(reason, remote),
    handshakeTimeoutMs: config.handshakeTimeoutMs,
    limits: kit.caps.mtls,
    http2: kit.http2?.(),
  });
  kit.track("mtls", mtls, kit.caps.mtls);
  advertisedUrl = config.advertiseUrl ?? defaultAdvertisedUrl(o.identity.sans, o.identity.name, config.host, mtls.port);
  return { listener: mtls, url: mtls.url, advertisedUrl };
}

/** What opening the enrollment port takes (FleetPki.openEnrollment: only a home holding the fleet CA opens it). */
export type OpenEnrollment = (
  opts: { host: string; port: number; mtlsPort: number; events?: EnrollmentEvents } & Pick<
    EnrollListenerOptions,
    "handshakeTimeoutMs" | "limits" | "http" | "onHandshakeError" | "onRefusedConnection" | "tooLarge"
  >,
) => Promise<Listener | undefined>;

interface EnrollmentEvents {
  enrolled(e: { name: string; fingerprint: string }): void;
  refused(e: { kind: string; reason: string; remote: string | undefined; name?: string }): void;
}

/** The enrollment port (enroll_port): machines with a join token get their certificate there. */
export async function openEnrollListener(
  kit: ListenerKit,
  open: OpenEnrollment,
  mtlsPort: number,
): Promise<Opened | undefined> {
  const { config, audit } = kit;
  if (config.enrollPort === undefined) return undefined;
  const enroll = await open({
    host: config.host,
    port: config.enrollPort,
    mtlsPort,
    tooLarge: tooLargeResponse,
    http: common(kit).http,
    handshakeTimeoutMs: config.handshakeTimeoutMs,
    limits: cap(kit, "enroll"),
    onHandshakeError: (err, remote) => audit.refused(`enrollment port: ${err.message}`, remote),
    onRefusedConnection: (reason, remote) => audit.refused(`enrollment port: ${reason}`, remote),
    events: {
      enrolled: (e) =>
        audit.call?.({
          peer: e.name,
          fingerprint: e.fingerprint,
          binding: "enroll",
          method: "POST /pki/enroll",
          outcome: "ok",
          ms: 0,
        }),
      // Failed enrollments are refusals like the others: the journal at a rate, the audit log summed per source.
      refused: (e) => audit.enrollmentRefused(e),
    },
  });
  if (!enroll) return undefined;
  kit.track("enroll", enroll, cap(kit, "enroll"));
  return { listener: enroll, url: enroll.url };
}

/** The plain-HTTP loopback listener (plain_http_port): local tools without a certificate, as one anonymous caller. */
export async function openPlainListener(kit: ListenerKit): Promise<Opened | undefined> {
  const { config } = kit;
  if (config.plainHttpPort === undefined) return undefined;
  let url = "";
  const plain = await listenPlainLoopback({
    ...common(kit),
    port: config.plainHttpPort,
    onRequest: kit.route(() => kit.card(url, "anonymous"), { pki: false, ops: true }),
    maxConnections: cap(kit, "plain").maxConnections,
    onRefusedConnection: (reason, remote) => kit.audit.refused(`plain loopback listener: ${reason}`, remote),
    http2: kit.http2?.(),
  });
  url = plain.url;
  kit.track("plain", plain, cap(kit, "plain"));
  kit.log.warn(
    `plain-HTTP listener open on loopback: any local process can use it, as caller '${LOOPBACK_CALLER.name}'`,
    { url: plain.url },
  );
  return { listener: plain, url };
}

/**
 * The token listener (token_port): callers outside the fleet with a bearer token. Health and metrics (which
 * name fleet callers) are not for them: it leaves those out. It speaks HTTP/1.1 only (JSON-RPC, HTTP+JSON), not
 * gRPC: its caller is proven per request by the Authorization header, and the gRPC binding takes its caller
 * from the connection (see src/help/topics/grpc.md); its card lists no GRPC interface.
 */
export async function openTokenListener(
  kit: ListenerKit,
  o: {
    tokens: () => { verify(token: string): CallerToken | undefined; list(): CallerToken[] };
    identity: { certPem: string; keyPem: string };
    advertisedUrl: string;
  },
): Promise<Opened | undefined> {
  const { config, audit } = kit;
  if (config.tokenPort === undefined) return undefined;
  const tokens = o.tokens();
  let url = "";
  const token = await listenToken({
    ...common(kit),
    host: config.tokenHost,
    port: config.tokenPort,
    tls: config.tokenTls === "on" ? { cert: o.identity.certPem, key: o.identity.keyPem } : undefined,
    verify: (t) => tokens.verify(t),
    current: () => tokens.list(),
    onDropped: (caller, remote) =>
      audit.refused(`token listener: closed an open connection: the token of '${caller}' was revoked`, remote),
    onRequest: kit.route(() => kit.card(tokenCardUrl(url, o.advertisedUrl), "bearer"), { pki: false, ops: false }),
    onUnauthorized: (reason, remote, kind) => audit.refused(`token listener: ${reason}`, remote, undefined, kind),
    handshakeTimeoutMs: config.handshakeTimeoutMs,
    limits: cap(kit, "token"),
    onHandshakeError: (err, remote) => audit.refused(`token listener: ${err.message}`, remote),
    onRefusedConnection: (reason, remote) => audit.refused(`token listener: ${reason}`, remote),
  });
  url = token.url;
  kit.track("token", token, cap(kit, "token"));
  if (config.tokenTls === "on")
    kit.log.info("token listener open: callers outside the fleet with a bearer token from 'a2a-node tokens add'", {
      url: token.url,
    });
  else
    kit.log.warn("token listener open over plain HTTP: bearer tokens cross the network in clear (token_tls = off)", {
      url: token.url,
    });
  return { listener: token, url };
}

/** The admin port (admin_port): health and metrics over plain HTTP on loopback, nothing else. */
export async function openAdminListener(
  kit: ListenerKit,
  ops: (method: string, path: string) => Promise<HttpResponse> | undefined,
): Promise<Opened | undefined> {
  const { config } = kit;
  if (config.adminPort === undefined) return undefined;
  const admin = await listenAdmin({
    port: config.adminPort,
    ops,
    maxConnections: cap(kit, "admin").maxConnections,
    onRefusedConnection: (reason, remote) => kit.audit.refused(`admin port: ${reason}`, remote),
  });
  kit.track("admin", admin, cap(kit, "admin"));
  kit.log.info("admin port open on loopback: /metrics and /health/* over plain HTTP, nothing else", { url: admin.url });
  return { listener: admin, url: admin.url };
}

/**
 * The web surface (Elysia, OpenAPI) of one listener, built on its first request: the JSON-RPC path never
 * needs it, and not loading it at start keeps the time from launch to the first answered task short.
 */
export function lazyWebApp(card: () => Promise<AgentCard>, startedAt: number) {
  let web: Promise<(request: Request, caller: CallerIdentity) => Promise<Response>> | undefined;
  return async (request: Request, caller: CallerIdentity) => {
    web ??= import("./web-app").then(({ createWebApp }) => createWebApp({ card, version: VERSION, startedAt }).handle);
    return (await web)(request, caller);
  };
}

/**
 * The token listener's card URL: where it listens, unless it listens on every interface (0.0.0.0, ::), whose
 * address no caller can use; then the mutual-TLS listener's advertised host with the token listener's port.
 */
function tokenCardUrl(listening: string, advertised: string): string {
  const u = new URL(listening);
  if (u.hostname !== "0.0.0.0" && u.hostname !== "[::]") return listening;
  const a = new URL(advertised);
  return `${u.protocol}//${a.host.replace(/:\d+$/, "")}:${u.port}`;
}

/**
 * A URL peers can use that the certificate vouches for: the bound address if the certificate names it,
 * otherwise this machine's host name if the certificate names that, otherwise the node name.
 */
function defaultAdvertisedUrl(sans: string[], name: string, bound: string, port: number): string {
  const wildcard = bound === "0.0.0.0" || bound === "::" || bound === "";
  const host = !wildcard && sans.includes(bound) ? bound : sans.includes(hostname()) ? hostname() : name;
  return `https://${isIP(host) === 6 ? `[${host}]` : host}:${port}`;
}
