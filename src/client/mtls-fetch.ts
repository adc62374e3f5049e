import { checkServerIdentity as defaultCheck, type PeerCertificate } from "node:tls";
import { FleetMembership, type RevocationLookup } from "../../pki/fleet-member";
import type { FetchFn } from "./a2a-client";

export interface ClientTls {
  /** PEM: this node's certificate and key (its identity), and the fleet CA servers must chain to. */
  cert: string;
  key: string;
  ca: string;
}

export interface Expectation {
  /** The CN the server's certificate must carry (a named peer). */
  name?: string;
  /** The SHA-256 fingerprint it must have (a pinned peer). */
  fingerprint?: string;
}

/** The server's certificate did not match what we expected of that peer. */
export class PeerIdentityError extends Error {
  constructor(
    message: string,
    readonly actualName?: string,
  ) {
    super(message);
    this.name = "PeerIdentityError";
  }
}

/**
 * A fetch that presents this node's certificate and trusts only the fleet CA. For a named peer, identity is
 * the certificate CN (and pinned fingerprint), not the host name: peers are often reached by IP address, and
 * the fleet CA vouching for "beta" is what matters. For a bare URL the usual host-name check applies. A server
 * whose certificate is on the fleet's revocation list (`revoked`) is refused before anything is sent.
 */
export function mtlsFetch(tls: ClientTls, expect: Expectation = {}, revoked?: RevocationLookup): FetchFn {
  const fleet = new FleetMembership(tls.ca, revoked);
  let mismatch: PeerIdentityError | undefined;
  const checkServerIdentity = (host: string, cert: PeerCertificate): Error | undefined => {
    const cn = typeof cert.subject?.CN === "string" ? cert.subject.CN : undefined;
    // Chaining to the fleet CA is not enough: the name must be one the fleet issues, as for a client.
    const verdict = fleet.check(cert);
    if ("refused" in verdict) return (mismatch = new PeerIdentityError(`the server's certificate is not a fleet member's: ${verdict.refused}`, cn));
    if (expect.name !== undefined) {
      if (cn !== expect.name) return (mismatch = new PeerIdentityError(`the server's certificate is for '${cn ?? "?"}', not '${expect.name}'`, cn));
    } else {
      const err = defaultCheck(host, cert);
      if (err) return (mismatch = new PeerIdentityError(`the server's certificate does not cover ${host}: ${err.message}`, cn));
    }
    if (expect.fingerprint && cert.fingerprint256?.toUpperCase() !== expect.fingerprint.toUpperCase())
      return (mismatch = new PeerIdentityError(
        `the server's certificate fingerprint ${cert.fingerprint256} is not the pinned ${expect.fingerprint}`,
        cn,
      ));
    return undefined;
  };
  const options = { cert: tls.cert, key: tls.key, ca: tls.ca, checkServerIdentity };
  return async (url, init) => {
    try {
      return await fetch(url, { ...init, tls: options } as RequestInit);
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
}
