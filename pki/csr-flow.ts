import { existsSync } from "node:fs";
import { hostname } from "node:os";
import { pkiErrors } from "./errors";
import { assertKeyMatchesCert } from "./keys";
import { createCsr, readCsr } from "./csr";
import { inspectCert, verifyIssuedBy } from "./inspect";
import { issueRecorded, openCaRegistry } from "./issuance";
import { checkDays, checkIssuedNodeName, isValidSan, normalizeNodeName } from "./names";
import { caSummary, nodeSummary, prepareDirs, type InitResult, type NodeSummary, type PkiPaths } from "./node-pki";
import type { IssuedCert } from "./registry";
import { PUBLIC_MODE, SECRET_MODE, readPublic, readSecret, writeFileAtomic } from "./secure-file";

export interface RequestResult {
  name: string;
  sans: string[];
  keyPath: string;
  csrPath: string;
  /** False when the key was already there (an earlier request whose certificate has not come back yet). */
  keyCreated: boolean;
}

/**
 * The first step of the air-gapped flow, on the new machine: makes this node's key (0600; never replaced)
 * and writes a certificate request for it to `csrOut`. Run again before the certificate came back, it signs a
 * new request with the same key rather than making another. SANs asked for: localhost, 127.0.0.1, this
 * machine's hostname and `sans`; the CA decides what it signs.
 *
 * @example await requestCertificate(homePaths(home), { name: "beta", csrOut: "beta.csr" })
 */
export async function requestCertificate(
  paths: PkiPaths,
  opts: { name: string; sans?: string[]; csrOut: string; overwrite?: boolean; hostname?: string },
): Promise<RequestResult> {
  const name = normalizeNodeName(opts.name);
  const host = (opts.hostname ?? hostname()).toLowerCase();
  const sans = ["localhost", "127.0.0.1", ...(isValidSan(host) ? [host] : []), ...(opts.sans ?? [])];
  if (existsSync(paths.nodeCert)) throw pkiErrors.certExists(paths.nodeCert);
  if (!opts.overwrite && existsSync(opts.csrOut)) throw pkiErrors.fileExists(opts.csrOut);
  const existingKey = existsSync(paths.nodeKey) ? readSecret(paths.nodeKey) : undefined;
  const { csrPem, keyPem } = await createCsr({ name, sans, keyPem: existingKey });
  prepareDirs(paths);
  if (!existingKey) writeFileAtomic(paths.nodeKey, keyPem, { mode: SECRET_MODE, onExists: pkiErrors.keyExists });
  writeFileAtomic(opts.csrOut, csrPem, { mode: PUBLIC_MODE, overwrite: opts.overwrite });
  const asked = await readCsr(csrPem);
  return { name, sans: [name, ...asked.sans], keyPath: paths.nodeKey, csrPath: opts.csrOut, keyCreated: !existingKey };
}

export interface SignResult {
  name: string;
  sans: string[];
  serial: string;
  fingerprint256: string;
  notAfter: Date;
  out: string;
  revoked: IssuedCert[];
}

/**
 * On the CA machine: signs a request made by `requestCertificate` (or any PKCS#10 request for an ECDSA P-256
 * key). The name is the request's CN; the SANs are the name, localhost, 127.0.0.1, those the request asks for
 * and `sans`. Recorded in the registry, refused while the name holds a valid certificate unless `replace`.
 * The certificate (public) is written to `out`.
 */
export async function signCsr(
  paths: PkiPaths,
  opts: {
    csrPath: string;
    out: string;
    sans?: string[];
    days?: number;
    replace?: boolean;
    overwrite?: boolean;
    now?: Date;
  },
): Promise<SignResult> {
  const days = checkDays(opts.days ?? 365, "certificate");
  const csr = await readCsr(readPublic(opts.csrPath), opts.csrPath);
  if (!opts.overwrite && existsSync(opts.out)) throw pkiErrors.fileExists(opts.out);
  const registry = openCaRegistry(paths);
  try {
    const issued = await issueRecorded(paths, registry, {
      name: csr.name,
      sans: ["localhost", "127.0.0.1", ...csr.sans, ...(opts.sans ?? [])],
      days,
      how: "csr",
      replace: opts.replace,
      publicKey: csr.publicKeyPem,
      now: opts.now,
      deliver: (leaf) => writeFileAtomic(opts.out, leaf.certPem, { mode: PUBLIC_MODE, overwrite: opts.overwrite }),
    });
    const r = issued.record;
    return {
      name: r.name,
      sans: r.sans,
      serial: r.serial,
      fingerprint256: r.fingerprint256,
      notAfter: r.notAfter,
      out: opts.out,
      revoked: issued.revoked,
    };
  } finally {
    registry.close();
  }
}

/**
 * The last step, back on the new machine: installs the certificate the CA signed for this home's pending key,
 * and the fleet CA certificate. Checked first: the CA file is a CA, it issued the certificate, both are valid
 * now, the certificate is for this home's key, and its name is one the fleet issues. Refuses a home that
 * already has a node certificate, or another fleet's CA (CA_MISMATCH).
 */
export async function importCertificate(
  paths: PkiPaths,
  opts: { certPath: string; caPath: string; now?: Date },
): Promise<InitResult> {
  const certPem = readPublic(opts.certPath);
  const caPem = readPublic(opts.caPath);
  const ca = inspectCert(caPem, opts.caPath);
  if (!ca.isCa) throw pkiErrors.notACa(opts.caPath);
  const cert = inspectCert(certPem, opts.certPath);
  await verifyIssuedBy(certPem, caPem, { now: opts.now, what: opts.certPath });
  checkIssuedNodeName(cert.subjectCn);
  if (existsSync(paths.nodeCert)) throw pkiErrors.certExists(paths.nodeCert);
  if (!existsSync(paths.nodeKey)) throw pkiErrors.noPendingKey(paths.nodeKey);
  assertKeyMatchesCert(readSecret(paths.nodeKey), certPem, paths.nodeKey, opts.certPath);
  const hasCaCert = existsSync(paths.caCert);
  if (hasCaCert && inspectCert(readPublic(paths.caCert), paths.caCert).fingerprint256 !== ca.fingerprint256)
    throw pkiErrors.caMismatch(paths.caCert, opts.caPath);
  prepareDirs(paths);
  if (!hasCaCert) writeFileAtomic(paths.caCert, caPem, { mode: PUBLIC_MODE, onExists: pkiErrors.certExists });
  writeFileAtomic(paths.nodeCert, certPem, { mode: PUBLIC_MODE, onExists: pkiErrors.certExists });
  const node: NodeSummary = nodeSummary(paths, certPem);
  return { ca: caSummary(paths, caPem, false, existsSync(paths.caKey)), node };
}
