import { X509Certificate } from "node:crypto";
import { nodeNameProblem } from "./names";

/** A certificate a TLS peer presented, as node:tls getPeerCertificate() and Bun's checkServerIdentity give it. */
export interface PresentedCert {
  /** The DER bytes. */
  raw?: Uint8Array;
  /** The runtime's parse of the subject: `{ CN: "alpha" }`, or `{ CN: ["a", "b"] }` for several CNs. */
  subject?: unknown;
}

/** A fleet member as its certificate proves it. */
export interface FleetMember {
  name: string;
  /** SHA-256 of the DER, "AB:CD:...", as node:tls reports fingerprint256. */
  fingerprint256: string;
  /** Uppercase hex without leading zeros, as the revocation list keys it. */
  serial: string;
}

/** A member, or why not; `revoked`: the one reason that is the fleet CA's own word (its revocation list). */
export type Membership = { member: FleetMember } | { refused: string; revoked?: true };

const SERVER_AUTH = "1.3.6.1.5.5.7.3.1";
const CLIENT_AUTH = "1.3.6.1.5.5.7.3.2";

/** When the certificate with this serial (uppercase hex, no leading zeros) was revoked; undefined if it was not. */
export type RevocationLookup = (serial: string) => Date | undefined;

/**
 * The fleet CA judging the certificates peers present, on both sides of mutual TLS. The TLS stack has already
 * checked the chain up to the fleet CA and the validity dates; this checks what it leaves open:
 *
 * - the certificate is a leaf signed by the fleet CA itself. The fleet CA says pathLen 0 (no CA below it),
 *   but Bun's TLS accepts a leaf under an intermediate CA the fleet CA signed, when the peer sends that
 *   intermediate along (`openssl verify` refuses the same chain). Checking the signature with the CA's
 *   own key needs no chain from the runtime, which Bun's fetch does not give its checkServerIdentity.
 * - it is for TLS client and server use both (extended key usage serverAuth and clientAuth), as every leaf of
 *   this PKI is.
 * - it is not on the fleet's revocation list (when a lookup is given; it is read at each check, so a new list
 *   applies to the next connection).
 * - the name is a node name exactly as this PKI issues one (lower case, no NUL or control characters, one CN
 *   and nothing else in the subject, not a reserved name): a name is compared byte for byte and used as
 *   the owner of tasks, so any other spelling would be another identity that merely looks alike.
 *
 * Built on node:crypto rather than @peculiar/x509, as identity.ts is: it runs once per connection.
 *
 * @example const verdict = new FleetMembership(caPem).check(socket.getPeerCertificate());
 */
export class FleetMembership {
  private readonly ca: X509Certificate;

  constructor(
    caPem: string,
    private readonly revoked?: RevocationLookup,
  ) {
    this.ca = new X509Certificate(caPem);
  }

  check(presented: PresentedCert | undefined): Membership {
    if (!presented?.raw?.length) return { refused: "no certificate" };
    let cert: X509Certificate;
    try {
      cert = new X509Certificate(presented.raw);
    } catch {
      return { refused: "its certificate does not parse" };
    }
    if (cert.ca) return { refused: "it is a CA certificate, not a node's" };
    // Every node is client and server both, and this PKI issues every leaf for both. The TLS stack checks only
    // the purpose of the side it is on, and lets a certificate with no extended key usage pass for any.
    const purposes = cert.keyUsage ?? [];
    if (!purposes.includes(SERVER_AUTH) || !purposes.includes(CLIENT_AUTH))
      return {
        refused: `its certificate is not for TLS client and server both (extended key usage: ${purposes.length ? purposes.join(", ") : "none"})`,
      };
    if (!cert.checkIssued(this.ca) || !cert.verify(this.ca.publicKey))
      return {
        refused: `it was not issued by the fleet CA itself (its issuer is ${JSON.stringify(cert.issuer)}; intermediate CAs are not accepted)`,
      };
    const serial = serialOf(cert);
    const revokedAt = this.revoked?.(serial);
    if (revokedAt)
      return { refused: `its certificate (serial ${serial}) was revoked on ${revokedAt.toISOString()}`, revoked: true };
    const name = nameOf(presented.subject, cert);
    if (typeof name !== "string") return name;
    return { member: { name, fingerprint256: cert.fingerprint256, serial } };
  }
}

/**
 * The subject's one CN. Two parsers must agree on it: the runtime's (which splits several CNs into an array)
 * and node:crypto's one-line form of the DER subject, which escapes ",", "+", "=" and control bytes, so a
 * subject reading exactly `CN=<node name>` has no other attribute and nothing hidden in that one.
 */
function nameOf(subject: unknown, cert: X509Certificate): string | { refused: string } {
  const cn = (subject as { CN?: unknown } | undefined)?.CN;
  if (typeof cn !== "string")
    return { refused: Array.isArray(cn) ? "its subject has several CNs" : "its subject has no CN" };
  const problem = nodeNameProblem(cn);
  if (problem) return { refused: problem };
  if (cert.subject !== `CN=${cn}`) return { refused: `its subject ${JSON.stringify(cert.subject)} is not a single CN` };
  return cn;
}

/** The serial as the revocation list keys it: uppercase hex without leading zeros. */
export function serialOf(cert: X509Certificate): string {
  return cert.serialNumber.toUpperCase().replace(/^0+(?=.)/, "");
}
