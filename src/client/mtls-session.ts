/**
 * HTTP/2 sessions as this node, for the gRPC binding: the same identity and the same rule for the server as
 * mtlsFetch (this node's certificate presented, only the fleet CA trusted, the server held to `expect` by
 * checkPeerIdentity, a revoked server refused before anything is sent), and the same step bounds: the TCP
 * connection within `connectMs`, then the TLS handshake within `handshakeMs`. The TLS socket is made here and
 * handed to node:http2, so the identity check runs once per connection, before the first call on it.
 */
import http2, { type ClientHttp2Session } from "node:http2";
import { isIP } from "node:net";
import tls, { type PeerCertificate } from "node:tls";
import { FleetMembership, type RevocationLookup } from "../../pki/fleet-member";
import { DEFAULT_PEER_TIMEOUTS, PeerTimeoutError, type PeerTimeouts } from "./deadlines";
import {
  checkPeerIdentity,
  type AcceptedPeer,
  type ClientTls,
  type Expectation,
  type MtlsFetchHooks,
} from "./mtls-fetch";
import { ProtocolError } from "./peer-client";

/** Opens an HTTP/2 session to `origin` (https://HOST:PORT); fails with the step or the rule that failed. */
export type SessionOpener = (origin: string) => Promise<ClientHttp2Session>;

/** An opener as this node, which also says which identity the server proved (the last connection made). */
export type PeerSessionOpener = SessionOpener & { accepted(): AcceptedPeer | undefined };

export function mtlsSession(
  identity: ClientTls,
  expect: Expectation = {},
  revoked?: RevocationLookup,
  hooks: MtlsFetchHooks = {},
  timeouts: PeerTimeouts = DEFAULT_PEER_TIMEOUTS,
): PeerSessionOpener {
  const fleet = new FleetMembership(identity.ca, revoked);
  let accepted: AcceptedPeer | undefined;
  const open: SessionOpener = (origin) =>
    new Promise((resolve, reject) => {
      const u = new URL(origin);
      const host = u.hostname.replace(/^\[|\]$/g, "");
      const socket = tls.connect({
        host,
        port: Number(u.port || 443),
        // SNI takes a name, never an address (RFC 6066 §3).
        ...(isIP(host) ? {} : { servername: host }),
        cert: identity.cert,
        key: identity.key,
        ca: identity.ca,
        ALPNProtocols: ["h2"],
        // Host names are not checked (peers are often reached by address): the fleet name is, below.
        checkServerIdentity: () => undefined,
      });
      let timer: ReturnType<typeof setTimeout> | undefined;
      let settled = false;
      const arm = (step: "connect" | "handshake", ms: number) => {
        clearTimeout(timer);
        timer = setTimeout(() => fail(new PeerTimeoutError(step, u.origin, ms / 1000)), ms);
      };
      const fail = (err: Error) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        socket.destroy();
        reject(err);
      };
      arm("connect", timeouts.connectMs);
      socket.once("connect", () => !settled && arm("handshake", timeouts.handshakeMs));
      socket.once("error", fail);
      socket.once("secureConnect", () => {
        if (settled) return;
        clearTimeout(timer);
        const verdict = checkPeerIdentity(fleet, socket.getPeerCertificate(true) as PeerCertificate, expect);
        if ("error" in verdict) return fail(verdict.error);
        accepted = verdict.accepted;
        if (!expect.keyPin && expect.certFingerprint) hooks.certPinMatched?.(accepted);
        if (socket.alpnProtocol !== "h2")
          return fail(
            new ProtocolError(
              `${u.origin} is '${accepted.name}' but does not speak HTTP/2 there (ALPN ${socket.alpnProtocol || "none"}), so it serves no gRPC`,
            ),
          );
        settled = true;
        socket.off("error", fail);
        resolve(http2.connect(u.origin, { createConnection: () => socket }));
      });
    });
  return Object.assign(open, { accepted: () => accepted });
}
