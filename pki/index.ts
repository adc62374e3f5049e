/**
 * The a2a-node certificate library: a fleet CA and its registry of what it issued, node certificates for
 * mutual TLS, bundles that carry an identity to another machine, and the home-level operations the CLI and
 * daemon call. It knows nothing of the server; it reads and writes only the files it is given.
 */
export { PkiError, pkiErrors, type PkiErrorCode } from "./errors";
export { writeFileAtomic, readSecret, readPublic, SECRET_MODE, PUBLIC_MODE, type WriteOptions } from "./secure-file";
export {
  generateKeyPair,
  exportPrivateKeyPem,
  exportPublicKeyPem,
  importPrivateKeyPem,
  assertKeyMatchesCert,
} from "./keys";
export {
  checkTrustDomain,
  normalizeNodeName,
  nodeNameProblem,
  RESERVED_NODE_NAMES,
  parseSan,
  normalizeSans,
  isValidSan,
  MAX_DAYS,
  type San,
} from "./names";
export type { CertAndKey } from "./cert-params";
export { createCa, defaultCaName, type CreateCaOptions } from "./ca";
export { issueLeaf, signPublicKey, type LeafOptions } from "./leaf";
export {
  inspectCert,
  certDetails,
  verifyIssuedBy,
  fingerprint256,
  type CertInfo,
  type CertDetails,
  type VerifyOptions,
} from "./inspect";
export { CaRegistry, normalizeSerial, type IssuedCert, type IssueKind, type StoredToken } from "./registry";
export {
  openCaRegistry,
  issueRecorded,
  NO_CA_KEY_FOR_ISSUE,
  recordOf,
  SPIFFE_DOMAIN,
  spiffeId,
  type CaPaths,
  type RecordedIssue,
  type RecordedIssueOptions,
} from "./issuance";
export {
  needsRenewal,
  renewalDue,
  renewalTime,
  expiryLevel,
  RENEW_AT,
  type Validity,
  type ExpiryLevel,
} from "./renewal-policy";
export { readBundle, writeBundle, BUNDLE_FORMAT, type Bundle } from "./bundle";
export {
  initPki,
  installBundle,
  issueBundle,
  loadNodeIdentity,
  type PkiPaths,
  type InitPkiOptions,
  type InitResult,
  type CaSummary,
  type NodeSummary,
  type IssueBundleOptions,
  type IssueResult,
  type NodeIdentity,
} from "./node-pki";
export { createCsr, readCsr, type CsrInfo } from "./csr";
export { requestCertificate, signCsr, importCertificate, type RequestResult, type SignResult } from "./csr-flow";
export { makeCrl, type CrlEntry } from "./crl";
export { CRL_VALID_REFRESHES, DEFAULT_CRL_VALID_FOR_MS, crlValidForMs } from "./crl-validity";
export { readRevocationList, type RevocationList } from "./crl-reader";
export { revoke, exportCrl, importCrl, type RevocationPaths, type RevokeResult } from "./revocation";
export { publishCrl, installedList } from "./crl-publish";
export { renewRecorded, type RenewalRequest } from "./renewal";
export { installRenewedIdentity, recoverInterruptedRenewal, type NodeFiles } from "./renewal-files";
export { keyPinOf, isKeyPin, KEY_PIN_PREFIX } from "./key-pin";
export { createToken, enrollWithToken, tokenHash, tokenName, MAX_TOKEN_TTL_MS, type NewToken } from "./tokens";
export { readCaKey, encryptKeyPem, protectCaKey, isEncryptedKey, MIN_PASSPHRASE, type Unlock } from "./ca-key";
export { supersedeInUse } from "./supersede";
