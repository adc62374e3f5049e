import { pkiErrors } from "./errors";
import { readCsr } from "./csr";
import { inspectCert, verifyIssuedBy } from "./inspect";
import { issueRecorded, type CaPaths, type RecordedIssue } from "./issuance";
import type { CaRegistry } from "./registry";
import { readPublic } from "./secure-file";

const DAY_MS = 86_400_000;

export interface RenewalRequest {
  /** The certificate request (PEM), signed by the holder with the key to certify: the current one, or a new one. */
  csrPem: string;
  /** The certificate being renewed, as the holder sent it. */
  currentCertPem: string;
  /** What the connection proved: the fingerprint of the certificate the caller presented, and its name. */
  presented: { name: string; fingerprint256: string };
  /**
   * Renew it even if it has expired: only for the CA's own home renewing its own node certificate, whose
   * holder has the CA key and could issue any certificate anyway. A peer asking over the network never may.
   */
  acceptExpired?: boolean;
  now?: Date;
}

/**
 * On the CA: a fresh certificate for the holder of a valid one, for a new key. The certificate sent must be the
 * one the connection presented (so it is held, not merely copied), issued by this CA, valid now and not revoked;
 * the request must be for the same name. Its key is the holder's choice, as with step-ca's `renew` (same key:
 * pins of the node's key stay valid) and `rekey` (a new key). The new certificate keeps the SANs and the
 * lifetime of the old one (shortened if the CA ends sooner), and is recorded as a renewal of the one presented,
 * which it supersedes: that one stays valid until the new one is first used (supersedeInUse), and any other
 * certificate of the name is revoked now (see RecordedIssueOptions.renewedFrom). Throws RENEW_REFUSED with the
 * reason.
 */
export async function renewRecorded(paths: CaPaths, registry: CaRegistry, req: RenewalRequest): Promise<RecordedIssue> {
  const now = req.now ?? new Date();
  const current = inspectCert(req.currentCertPem, "the certificate to renew");
  if (current.fingerprint256 !== req.presented.fingerprint256.toUpperCase())
    throw pkiErrors.renewRefused("the certificate sent is not the one this connection presented");
  const caPem = readPublic(paths.caCert);
  await verifyIssuedBy(req.currentCertPem, caPem, {
    now,
    what: "the certificate to renew",
    ignoreValidity: req.acceptExpired && now > current.notAfter,
  });
  if (current.subjectCn !== req.presented.name)
    throw pkiErrors.renewRefused(`the certificate is for "${current.subjectCn}", not "${req.presented.name}"`);
  const record = registry.bySerial(current.serialNumber);
  if (record?.revokedAt)
    throw pkiErrors.renewRefused(
      `the certificate (serial ${record.serial}) was revoked on ${record.revokedAt.toISOString()}`,
    );
  const csr = await readCsr(req.csrPem, "the renewal request");
  if (csr.name !== current.subjectCn)
    throw pkiErrors.renewRefused(
      `the request is for "${csr.name}", but the certificate renewed is "${current.subjectCn}"`,
    );
  const lifetime = Math.max(1, Math.round((current.notAfter.getTime() - current.notBefore.getTime()) / DAY_MS));
  const caLeft = Math.floor((inspectCert(caPem).notAfter.getTime() - now.getTime()) / DAY_MS);
  if (caLeft < 1) throw pkiErrors.outlivesCa(lifetime, inspectCert(caPem).notAfter, caLeft);
  return issueRecorded(paths, registry, {
    name: current.subjectCn,
    sans: current.sans,
    days: Math.min(lifetime, caLeft),
    how: "renew",
    renewedFrom: current.serialNumber,
    publicKey: csr.publicKeyPem,
    now,
  });
}
