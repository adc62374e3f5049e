import { X509Certificate, verify } from "node:crypto";
import { children, integerHex, readOne, TAG, time, type Tlv } from "./der";
import { pkiErrors } from "./errors";

/** A fleet revocation list whose signature by the fleet CA has been checked. */
export interface RevocationList {
  pem: string;
  /** The CRL number: every list the CA signs has a higher one, so an older list can never replace a newer. */
  number: number;
  thisUpdate: Date;
  nextUpdate?: Date;
  /** Revoked serials (uppercase hex, no leading zeros) and when each was revoked. */
  revoked: ReadonlyMap<string, Date>;
}

// ecdsa-with-SHA256 (1.2.840.10045.4.3.2): the one algorithm this fleet's CA signs with.
const ECDSA_SHA256 = Buffer.from("06082a8648ce3d040302", "hex");
const OID_CRL_NUMBER = Buffer.from("551d14", "hex");
// Non-critical extensions a CRL of ours may carry; an unknown critical one (a delta CRL, a partial list)
// means the list says something we would not understand, so it is refused, as RFC 5280 requires.
const OID_AUTHORITY_KEY_ID = Buffer.from("551d23", "hex");

/**
 * Reads an X.509 CRL (PEM) and checks it was signed by the fleet CA in `caPem`: one "X509 CRL" block, issued
 * under the CA's exact subject, signed with ECDSA/SHA-256 by the CA's key, with a CRL number. Built on
 * node:crypto and a small DER walker, not @peculiar/x509: the daemon reads it at start and on every refresh.
 * Throws BAD_CRL with the reason.
 *
 * @example const list = readRevocationList(readFileSync(paths.crl, "utf8"), identity.caPem);
 */
export function readRevocationList(pem: string, caPem: string, what = "the revocation list"): RevocationList {
  const fail = (reason: string) => pkiErrors.badCrl(what, reason);
  const blocks = [...pem.matchAll(/-----BEGIN ([A-Z0-9 ]+)-----([\s\S]*?)-----END \1-----/g)];
  if (blocks.length !== 1 || blocks[0][1] !== "X509 CRL") throw fail("not one PEM revocation list (BEGIN X509 CRL)");
  const der = Buffer.from(blocks[0][2].replace(/\s+/g, ""), "base64");
  let parsed;
  try {
    parsed = parse(der);
  } catch (err) {
    throw fail(`it does not parse (${(err as Error).message})`);
  }
  const ca = new X509Certificate(caPem);
  if (!parsed.issuer.equals(subjectOf(ca))) throw fail("its issuer is not the fleet CA");
  if (!parsed.sigAlg.equals(ECDSA_SHA256) || !parsed.innerSigAlg.equals(ECDSA_SHA256))
    throw fail("it is not signed with ECDSA and SHA-256");
  let ok = false;
  try {
    ok = verify("sha256", parsed.tbs, ca.publicKey, parsed.signature);
  } catch {
    ok = false;
  }
  if (!ok) throw fail("its signature does not verify with the fleet CA's key");
  if (parsed.number === undefined) throw fail("it has no CRL number");
  return {
    pem: blocks[0][0] + "\n",
    number: parsed.number,
    thisUpdate: parsed.thisUpdate,
    nextUpdate: parsed.nextUpdate,
    revoked: parsed.revoked,
  };
}

interface Parsed {
  tbs: Buffer;
  sigAlg: Buffer;
  innerSigAlg: Buffer;
  signature: Buffer;
  issuer: Buffer;
  thisUpdate: Date;
  nextUpdate?: Date;
  revoked: Map<string, Date>;
  number?: number;
}

function parse(der: Buffer): Parsed {
  const top = readOne(der);
  expectTag(top, TAG.SEQUENCE, "CertificateList");
  const [tbs, sigAlg, sigBits, ...extra] = children(top.value);
  if (!tbs || !sigAlg || !sigBits || extra.length) throw new Error("CertificateList has not three parts");
  expectTag(tbs, TAG.SEQUENCE, "TBSCertList");
  expectTag(sigBits, TAG.BIT_STRING, "signature");
  if (sigBits.value[0] !== 0) throw new Error("signature BIT STRING has unused bits");
  const parts = children(tbs.value);
  let i = 0;
  if (parts[i]?.tag === TAG.INTEGER) i++; // version (v2)
  const innerSigAlg = parts[i++];
  const issuer = parts[i++];
  const thisUpdate = parts[i++];
  if (!innerSigAlg || !issuer || !thisUpdate) throw new Error("TBSCertList is too short");
  expectTag(innerSigAlg, TAG.SEQUENCE, "signature algorithm");
  expectTag(issuer, TAG.SEQUENCE, "issuer");
  let nextUpdate: Date | undefined;
  if (parts[i] && (parts[i].tag === TAG.UTC_TIME || parts[i].tag === TAG.GENERALIZED_TIME))
    nextUpdate = time(parts[i++]);
  const revoked = new Map<string, Date>();
  if (parts[i]?.tag === TAG.SEQUENCE) {
    for (const entry of children(parts[i++].value)) {
      expectTag(entry, TAG.SEQUENCE, "revoked certificate");
      const [serial, date] = children(entry.value);
      if (!serial || !date) throw new Error("revoked certificate entry is too short");
      revoked.set(integerHex(serial), time(date));
    }
  }
  let number: number | undefined;
  if (parts[i]?.tag === 0xa0) {
    const [exts] = children(parts[i++].value);
    expectTag(exts, TAG.SEQUENCE, "extensions");
    for (const ext of children(exts.value)) {
      const [oid, ...rest] = children(ext.value);
      const critical = rest.length === 2 && rest[0].tag === 0x01 && rest[0].value[0] !== 0;
      const value = rest[rest.length - 1];
      expectTag(oid, TAG.OID, "extension id");
      expectTag(value, TAG.OCTET_STRING, "extension value");
      if (oid.value.equals(OID_CRL_NUMBER)) number = Number(BigInt(`0x${integerHex(readOne(value.value))}`));
      else if (critical && !oid.value.equals(OID_AUTHORITY_KEY_ID))
        throw new Error(`it has a critical extension this node does not know (${oid.value.toString("hex")})`);
    }
  }
  if (i !== parts.length) throw new Error("unexpected fields in TBSCertList");
  return {
    tbs: tbs.raw,
    sigAlg: children(sigAlg.value)[0]?.raw ?? Buffer.alloc(0),
    innerSigAlg: children(innerSigAlg.value)[0]?.raw ?? Buffer.alloc(0),
    signature: sigBits.value.subarray(1),
    issuer: issuer.raw,
    thisUpdate: time(thisUpdate),
    nextUpdate,
    revoked,
    number,
  };
}

/** The CA certificate's subject, as encoded: a CRL's issuer must be the same bytes. */
function subjectOf(cert: X509Certificate): Buffer {
  const [tbs] = children(readOne(cert.raw).value);
  const parts = children(tbs.value);
  const offset = parts[0].tag === 0xa0 ? 1 : 0; // [0] version
  return parts[offset + 4].raw; // serial, signature, issuer, validity, subject
}

function expectTag(t: Tlv | undefined, tag: number, what: string): asserts t is Tlv {
  if (!t || t.tag !== tag) throw new Error(`${what} is not where a CRL has it`);
}
