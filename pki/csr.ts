import { createPrivateKey, createPublicKey } from "node:crypto";
import { EC_ALGORITHM, x509 } from "./x509";
import { pkiErrors } from "./errors";
import { exportPrivateKeyPem, generateKeyPair } from "./keys";
import { normalizeNodeName, normalizeSans } from "./names";

/** What a certificate request asks for, once checked. */
export interface CsrInfo {
  /** The requested node name (the CN), in canonical form. */
  name: string;
  /** DNS names and IPs the request asks for (its subjectAltName extension), without the name itself. */
  sans: string[];
  /** The requester's public key, SPKI PEM: all the CA ever needs of it. */
  publicKeyPem: string;
}

/**
 * A PKCS#10 request for `name`, signed with a key made here (or `keyPem`, an existing PKCS#8 key). The key
 * stays with the caller; only the request travels to the CA. SANs go in as an extensionRequest, so the CA
 * can see what the machine asks to be dialled by.
 */
export async function createCsr(opts: {
  name: string;
  sans: string[];
  keyPem?: string;
}): Promise<{ csrPem: string; keyPem: string }> {
  const name = normalizeNodeName(opts.name);
  const sans = normalizeSans(opts.sans).filter((s) => s.value !== name);
  const keys = opts.keyPem ? await importKeyPair(opts.keyPem) : await generateKeyPair();
  const csr = await x509.Pkcs10CertificateRequestGenerator.create({
    name: [{ CN: [name] }],
    keys,
    signingAlgorithm: EC_ALGORITHM,
    extensions: sans.length ? [new x509.SubjectAlternativeNameExtension(sans)] : [],
  });
  return { csrPem: csr.toString("pem") + "\n", keyPem: opts.keyPem ?? (await exportPrivateKeyPem(keys.privateKey)) };
}

/**
 * Reads and checks a certificate request before the CA signs anything for it: exactly one PEM request, its
 * signature made by the key it carries (proof the requester holds that key), an ECDSA P-256 key (the one
 * algorithm this fleet uses), a subject of one CN that is a valid, unreserved node name, and well-formed
 * SANs. Every failure is BAD_CSR, or BAD_NAME / RESERVED_NAME / BAD_SAN for the name and SANs.
 */
export async function readCsr(pem: string, what = "the certificate request"): Promise<CsrInfo> {
  const fail = (reason: string) => pkiErrors.badCsr(what, reason);
  let csr: x509.Pkcs10CertificateRequest;
  try {
    const blocks = x509.PemConverter.decodeWithHeaders(pem);
    if (blocks.length !== 1 || !/^(NEW )?CERTIFICATE REQUEST$/.test(blocks[0].type)) throw new Error("not one request");
    csr = new x509.Pkcs10CertificateRequest(blocks[0].rawData);
  } catch {
    throw fail("not one PEM certificate request (BEGIN CERTIFICATE REQUEST)");
  }
  const alg = csr.publicKey.algorithm as { name: string; namedCurve?: string };
  if (alg.name !== "ECDSA" || alg.namedCurve !== "P-256")
    throw fail(`its key is ${alg.name}${alg.namedCurve ? ` ${alg.namedCurve}` : ""}, not ECDSA P-256`);
  const signed = await csr.verify().catch(() => false);
  if (!signed) throw fail("its signature does not verify with the key it carries");
  const cns = csr.subjectName.getField("CN");
  const attributes = csr.subjectName.toJSON().flatMap((rdn) => Object.keys(rdn));
  if (cns.length !== 1 || attributes.length !== 1)
    throw fail(`its subject must be one CN, the node name (it is "${csr.subject}")`);
  const name = normalizeNodeName(cns[0]);
  const sanExt = csr.getExtension("2.5.29.17");
  const requested = sanExt ? new x509.SubjectAlternativeNameExtension(sanExt.rawData).names.items : [];
  const other = requested.find((n) => n.type !== "dns" && n.type !== "ip");
  if (other) throw fail(`it asks for ${other.type} SANs; only DNS names and IP addresses are issued`);
  const sans = normalizeSans(requested.map((n) => n.value))
    .map((s) => s.value)
    .filter((s) => s !== name);
  const publicKeyPem = x509.PemConverter.encode(csr.publicKey.rawData, "PUBLIC KEY") + "\n";
  return { name, sans, publicKeyPem };
}

/** A PKCS#8 key and its public half, as WebCrypto keys, to sign a request with an existing key. */
async function importKeyPair(keyPem: string): Promise<CryptoKeyPair> {
  try {
    const privateDer = createPrivateKey(keyPem).export({ type: "pkcs8", format: "der" });
    const publicDer = createPublicKey(keyPem).export({ type: "spki", format: "der" });
    const privateKey = await crypto.subtle.importKey("pkcs8", privateDer, EC_ALGORITHM, false, ["sign"]);
    const publicKey = await crypto.subtle.importKey("spki", publicDer, EC_ALGORITHM, true, ["verify"]);
    return { privateKey, publicKey };
  } catch {
    throw pkiErrors.badKey("this node's key");
  }
}
