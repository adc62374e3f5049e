import { canonicalJson } from "./canonical-json";
import type { AgentCard, AgentCardSignature } from "./types";

/**
 * Agent card signatures as the A2A v1.0 spec describes them (AgentCard.signatures): a JWS (RFC 7515) whose
 * payload is the RFC 8785 canonical JSON of the card without its `signatures` member, carried detached: the
 * card holds only the protected header and the signature. The signing input is
 * ASCII(base64url(protected) "." base64url(payload)), as for any JWS.
 *
 * Before canonicalising, empty members ("", null, [] and {}, recursively) are dropped, as the official SDKs do
 * (@a2a-js/sdk's canonicalizeAgentCard, a2a-python's signing utilities): a card is protobuf in JSON, where an
 * empty list and an absent one are the same value, so a signer and a verifier that serialise it differently
 * still agree on what was signed. Our own card's mutual-TLS requirement has an empty scope list; without this
 * step the SDK's verifier refused our signatures.
 *
 * This fleet signs with ES256 (ECDSA P-256 and SHA-256, the key of every certificate the fleet CA issues); the
 * signature is r||s, 64 bytes, as JWS writes ECDSA (RFC 7518 3.4), not DER, which is what WebCrypto produces
 * and checks. The protected header carries `x5c` (the signer's certificate, base64 DER) so a client can check
 * it against the fleet CA it already trusts, and `kid`, the key's pin (spki:sha256:...).
 */

/** The protected header of a signature as this fleet writes it; other JWS members are kept when read. */
export interface CardSignatureHeader {
  alg: string;
  typ?: string;
  kid?: string;
  /** The signer's certificate chain, leaf first, each standard base64 of the DER (RFC 7515 4.1.6). */
  x5c?: string[];
  [member: string]: unknown;
}

export const CARD_SIGNATURE_ALG = "ES256";
const ES256 = { name: "ECDSA", hash: "SHA-256" } as const;
const P256 = { name: "ECDSA", namedCurve: "P-256" } as const;

/** The bytes a card signature covers, for the base64url protected header `protectedB64`. */
export function cardSigningInput(card: AgentCard, protectedB64: string): Uint8Array<ArrayBuffer> {
  const { signatures: _left, ...unsigned } = card;
  const payload = Buffer.from(canonicalJson(withoutEmptyMembers(unsigned) ?? {}), "utf8").toString("base64url");
  return new TextEncoder().encode(`${protectedB64}.${payload}`);
}

/** `value` without its empty members, recursively; undefined when nothing is left ("", null, [], {}). */
export function withoutEmptyMembers(value: unknown): unknown {
  if (value === "" || value === null || value === undefined) return undefined;
  if (Array.isArray(value)) {
    const kept = value.map(withoutEmptyMembers).filter((v) => v !== undefined);
    return kept.length > 0 ? kept : undefined;
  }
  if (typeof value === "object") {
    const kept: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) {
      const c = withoutEmptyMembers(v);
      if (c !== undefined) kept[k] = c;
    }
    return Object.keys(kept).length > 0 ? kept : undefined;
  }
  return value;
}

export interface CardSigner {
  /** The ECDSA P-256 private key (WebCrypto, usage "sign"). */
  privateKey: CryptoKey;
  /** The signer's certificate chain, leaf first, DER. */
  chain: Uint8Array[];
  /** The key id to name (this fleet: the key pin). */
  kid: string;
}

/** The card with one signature by `signer` in place of any it had. */
export async function signAgentCard(card: AgentCard, signer: CardSigner): Promise<AgentCard> {
  const header: CardSignatureHeader = {
    alg: CARD_SIGNATURE_ALG,
    typ: "JOSE",
    kid: signer.kid,
    x5c: signer.chain.map((der) => Buffer.from(der).toString("base64")),
  };
  const protectedB64 = Buffer.from(JSON.stringify(header), "utf8").toString("base64url");
  const signature = new Uint8Array(
    await crypto.subtle.sign(ES256, signer.privateKey, cardSigningInput(card, protectedB64)),
  );
  const { signatures: _replaced, ...unsigned } = card;
  return {
    ...unsigned,
    signatures: [{ protected: protectedB64, signature: Buffer.from(signature).toString("base64url") }],
  };
}

/** The protected header of `sig`, or undefined if it is not base64url JSON of an object with an `alg`. */
export function readSignatureHeader(sig: AgentCardSignature): CardSignatureHeader | undefined {
  if (typeof sig?.protected !== "string" || !/^[A-Za-z0-9_-]+$/.test(sig.protected)) return undefined;
  try {
    const header = JSON.parse(Buffer.from(sig.protected, "base64url").toString("utf8")) as unknown;
    if (
      header === null ||
      typeof header !== "object" ||
      Array.isArray(header) ||
      typeof (header as CardSignatureHeader).alg !== "string"
    )
      return undefined;
    return header as CardSignatureHeader;
  } catch {
    return undefined;
  }
}

/**
 * Whether `sig` is an ES256 signature of `card` by the P-256 public key `spkiDer`. Anything malformed (another
 * alg, a signature not 64 bytes, a key that is not P-256) is false: the caller says why it refused.
 */
export async function verifyCardSignature(
  card: AgentCard,
  sig: AgentCardSignature,
  spkiDer: Uint8Array<ArrayBuffer>,
): Promise<boolean> {
  const header = readSignatureHeader(sig);
  if (
    header?.alg !== CARD_SIGNATURE_ALG ||
    typeof sig.signature !== "string" ||
    !/^[A-Za-z0-9_-]+$/.test(sig.signature)
  )
    return false;
  const signature = new Uint8Array(Buffer.from(sig.signature, "base64url"));
  if (signature.length !== 64) return false;
  let input: Uint8Array<ArrayBuffer>;
  try {
    input = cardSigningInput(card, sig.protected);
  } catch {
    return false; // not canonicalisable (NaN, a lone surrogate): not what anyone signed
  }
  try {
    const key = await crypto.subtle.importKey("spki", spkiDer, P256, false, ["verify"]);
    return await crypto.subtle.verify(ES256, key, signature, input);
  } catch {
    return false;
  }
}
