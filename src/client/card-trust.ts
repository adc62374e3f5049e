import { X509Certificate } from "node:crypto";
import { FleetMembership, type RevocationLookup } from "../../pki/fleet-member";
import { keyPinOf } from "../../pki/key-pin";
import { readSignatureHeader, verifyCardSignature } from "../protocol/card-signature";
import type { AgentCard } from "../protocol/types";

/** Why a peer's card was not trusted; `reason` tells apart the cases a person fixes differently. */
export class CardTrustError extends Error {
  constructor(
    message: string,
    readonly reason: "unsigned" | "malformed" | "not-member" | "wrong-name" | "bad-signature",
  ) {
    super(message);
    this.name = "CardTrustError";
  }
}

export interface CardTrustOptions {
  /** The fleet CA (PEM) the signer's certificate must be issued by. */
  ca: string;
  revoked?: RevocationLookup;
  /**
   * The fleet name the signer must carry: the name the TLS connection proved. Unset: any fleet member, named in the
   * result.
   */
  name?: string;
  now?: Date;
}

/** Who signed a card that was trusted. */
export interface CardSigner {
  name: string;
  keyPin: string;
  fingerprint256: string;
}

/**
 * Checks a peer's agent card before its URLs and skills are used: it must carry an ES256 signature whose
 * certificate (x5c, in the protected header) the fleet CA issued to a node, valid now, not revoked, carrying
 * the fleet name the connection proved (a card signed by another member's key is refused), and the signature
 * must verify over the card as received. One good signature is enough; if none is, the error is the first
 * signature's. Throws CardTrustError.
 */
export async function verifyFleetCard(card: AgentCard, o: CardTrustOptions): Promise<CardSigner> {
  const sigs = Array.isArray(card.signatures) ? card.signatures : [];
  if (sigs.length === 0) throw new CardTrustError("its agent card is not signed", "unsigned");
  let first: CardTrustError | undefined;
  for (const sig of sigs) {
    try {
      return await checkOne(card, sig, o);
    } catch (err) {
      if (!(err instanceof CardTrustError)) throw err;
      first ??= err;
    }
  }
  throw first as CardTrustError;
}

async function checkOne(
  card: AgentCard,
  sig: NonNullable<AgentCard["signatures"]>[number],
  o: CardTrustOptions,
): Promise<CardSigner> {
  const header = readSignatureHeader(sig);
  if (!header) throw new CardTrustError("its agent card signature has no readable protected header", "malformed");
  if (header.alg !== "ES256")
    throw new CardTrustError(
      `its agent card is signed with ${JSON.stringify(header.alg)}, not ES256 (the fleet's ECDSA P-256 keys)`,
      "malformed",
    );
  const leafB64 = Array.isArray(header.x5c) ? header.x5c[0] : undefined;
  if (typeof leafB64 !== "string")
    throw new CardTrustError(
      "its agent card signature names no certificate (x5c) to check against the fleet CA",
      "malformed",
    );
  let leaf: X509Certificate;
  try {
    leaf = new X509Certificate(Buffer.from(leafB64, "base64"));
  } catch {
    throw new CardTrustError("the certificate in its agent card signature (x5c) does not parse", "malformed");
  }
  const subject = leaf.subject.startsWith("CN=") ? { CN: leaf.subject.slice(3) } : {};
  const verdict = new FleetMembership(o.ca, o.revoked).check({ raw: leaf.raw, subject });
  if ("refused" in verdict)
    throw new CardTrustError(
      `its agent card is signed by a certificate that is not a fleet member's: ${verdict.refused}`,
      "not-member",
    );
  const now = (o.now ?? new Date()).getTime();
  if (now < leaf.validFromDate.getTime() || now > leaf.validToDate.getTime())
    throw new CardTrustError(
      `its agent card is signed by a certificate valid only from ${leaf.validFromDate.toISOString()} to ${leaf.validToDate.toISOString()}`,
      "not-member",
    );
  const signer = verdict.member.name;
  if (o.name !== undefined && signer !== o.name)
    throw new CardTrustError(`its agent card is signed by fleet node '${signer}', not by '${o.name}'`, "wrong-name");
  const spki = leaf.publicKey.export({ type: "spki", format: "der" });
  if (!(await verifyCardSignature(card, sig, new Uint8Array(spki))))
    throw new CardTrustError(
      `its agent card signature (by '${signer}') does not verify: the card was changed after it was signed`,
      "bad-signature",
    );
  return { name: signer, keyPin: keyPinOf(leaf), fingerprint256: leaf.fingerprint256 };
}
