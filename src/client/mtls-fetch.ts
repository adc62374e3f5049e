import type { PeerCertificate } from "node:tls";
import { FleetMembership, type RevocationLookup } from "../../pki/fleet-member";
import { keyPinOf } from "../../pki/key-pin";
import type { FetchFn } from "./peer-client";
import { refuseWrongPort } from "./wrong-port";
import { DEFAULT_PEER_TIMEOUTS, withDeadlines, type PeerTimeouts, type SecuredFetch } from "./deadlines";

export interface ClientTls {
  /** PEM: this node's certificate and key (its identity), and the fleet CA servers must chain to. */
  cert: string;
  key: string;
  ca: string;
}

/** What the server must prove: who it is (its fleet name), and, if pinned, which key it holds. */
export interface Expectation {
  /** The fleet name (certificate CN) the server must carry. Without it any fleet member is accepted and named. */
  name?: string;
  /** The pinned public key (keyPinOf: `spki:sha256:...`), which renewal keeps. */
  keyPin?: string;
  /** An older pin, of one certificate (SHA-256 of its DER, AB:CD:...): the peer's next renewal breaks it. */
  certFingerprint?: string;
}

/** The identity a server proved on a connection. */
export interface AcceptedPeer {
  name: string;
  fingerprint256: string;
  keyPin: string;
  serial: string;
}

/**
 * Which part of the one rule failed: not a fleet member, another fleet name, or a key (or certificate) other than the
 * pinned.
 */
export type IdentityFailure = "not-member" | "name" | "pin";

/** The server's certificate did not match what we expected of that peer. */
export class PeerIdentityError extends Error {
  constructor(
    message: string,
    readonly failed: IdentityFailure,
    readonly actualName?: string,
    /** The pin that failed was an older certificate pin (renewal replaces the certificate). */
    readonly certPin = false,
  ) {
    super(message);
    this.name = "PeerIdentityError";
  }
}

/**
 * The one rule for a server, whether it was named or given by URL: its certificate chains to the fleet CA (the
 * TLS stack checked that) and is a fleet member's (FleetMembership); its fleet name is the identity, so with
 * `expect.name` it must carry that name; and if the peer is pinned, its public key must be the pinned one (or,
 * for an older pin, the certificate must be the pinned one). Host names are not checked: peers are often
 * reached by IP address, and the fleet CA vouching for "beta" is what matters. Returns the accepted identity,
 * or the error saying which part failed.
 */
export function checkPeerIdentity(
  fleet: FleetMembership,
  cert: PeerCertificate,
  expect: Expectation,
): { accepted: AcceptedPeer } | { error: PeerIdentityError } {
  const cn = typeof cert.subject?.CN === "string" ? cert.subject.CN : undefined;
  const verdict = fleet.check(cert);
  if ("refused" in verdict)
    return {
      error: new PeerIdentityError(
        `the server's certificate is not a fleet member's: ${verdict.refused}`,
        "not-member",
        cn,
      ),
    };
  const { name, fingerprint256, serial } = verdict.member;
  if (expect.name !== undefined && name !== expect.name)
    return {
      error: new PeerIdentityError(
        `the server is fleet node '${name}', not '${expect.name}' (the name its fleet certificate carries)`,
        "name",
        name,
      ),
    };
  const keyPin = keyPinOf(cert.raw);
  if (expect.keyPin && keyPin !== expect.keyPin)
    return {
      error: new PeerIdentityError(
        `the server is '${name}' by its fleet certificate, but its public key ${keyPin} is not the pinned ${expect.keyPin}`,
        "pin",
        name,
      ),
    };
  if (!expect.keyPin && expect.certFingerprint && fingerprint256.toUpperCase() !== expect.certFingerprint.toUpperCase())
    return {
      error: new PeerIdentityError(
        `the server is '${name}' by its fleet certificate, but that certificate (fingerprint ${fingerprint256}) is not the pinned ${expect.certFingerprint} (a pin of one certificate, from before key pins: a renewal replaces the certificate)`,
        "pin",
        name,
        true,
      ),
    };
  return { accepted: { name, fingerprint256, keyPin, serial } };
}

/** A fetch as this node that also says which identity the server proved (the last connection made). */
export type PeerFetch = FetchFn & { accepted(): AcceptedPeer | undefined };

export interface MtlsFetchHooks {
  /**
   * An older certificate pin matched: the certificate is the very one pinned, so its key can be pinned in its
   * place (the pin is converted on contact, and then survives the peer's renewals).
   */
  certPinMatched?(accepted: AcceptedPeer): void;
}

/**
 * A fetch that presents this node's certificate, trusts only the fleet CA, and holds the server to `expect`
 * (checkPeerIdentity). A server whose certificate is on the fleet's revocation list (`revoked`) is refused
 * before anything is sent. Each call is bounded step by step (`timeouts`, deadlines.ts): the identity check
 * runs at the end of each handshake (a request with its own check has a connection of its own), which is what
 * tells the handshake's time from the answer's.
 */
export function mtlsFetch(
  tls: ClientTls,
  expect: Expectation = {},
  revoked?: RevocationLookup,
  hooks: MtlsFetchHooks = {},
  timeouts: PeerTimeouts = DEFAULT_PEER_TIMEOUTS,
): PeerFetch {
  const fleet = new FleetMembership(tls.ca, revoked);
  let mismatch: PeerIdentityError | undefined;
  let accepted: AcceptedPeer | undefined;
  const checked =
    (secured: () => void) =>
    (_host: string, cert: PeerCertificate): Error | undefined => {
      secured();
      const verdict = checkPeerIdentity(fleet, cert, expect);
      if ("error" in verdict) return (mismatch = verdict.error);
      accepted = verdict.accepted;
      if (!expect.keyPin && expect.certFingerprint) hooks.certPinMatched?.(accepted);
      return undefined;
    };
  const inner: SecuredFetch = async (url, init, secured) => {
    const options = { cert: tls.cert, key: tls.key, ca: tls.ca, checkServerIdentity: checked(secured) };
    try {
      // A node's enrollment port proves the node's name too, and then answers nothing of A2A: said as such.
      return await refuseWrongPort(url, await fetch(url, { ...init, tls: options } as RequestInit), accepted?.name);
    } catch (err) {
      // Bun reports our own rejection as a plain error; hand back the precise one.
      if (mismatch) {
        const m = mismatch;
        mismatch = undefined;
        throw m;
      }
      throw err;
    }
  };
  return Object.assign(withDeadlines(inner, timeouts, true), { accepted: () => accepted });
}

/** What a registered peer's entry asks of its server. */
export function expectationOf(peer: { name: string; keyPin?: string; fingerprint?: string }): Expectation {
  return { name: peer.name, keyPin: peer.keyPin, certFingerprint: peer.keyPin ? undefined : peer.fingerprint };
}
