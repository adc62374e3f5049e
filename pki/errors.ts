/**
 * Every error the PKI can raise, in one list. Each has a stable code (for tests and callers that branch),
 * a one-line message saying what is wrong, and a hint saying what to do next. Messages name files and
 * certificate names, never key material.
 */
export type PkiErrorCode =
  | "KEY_EXISTS"
  | "CERT_EXISTS"
  | "FILE_EXISTS"
  | "CA_MISMATCH"
  | "NO_CA"
  | "NO_CA_KEY"
  | "NO_NODE_CERT"
  | "NO_NODE_KEY"
  | "BAD_BUNDLE"
  | "BAD_NAME"
  | "RESERVED_NAME"
  | "BAD_SAN"
  | "BAD_DAYS"
  | "BAD_PEM"
  | "BAD_KEY"
  | "KEY_MISMATCH"
  | "NOT_A_CA"
  | "OUTLIVES_CA"
  | "INSECURE_PERMISSIONS"
  | "NOT_ISSUED_BY_CA"
  | "EXPIRED"
  | "NOT_YET_VALID"
  | "READ_FAILED"
  | "NAME_HAS_CERT"
  | "BAD_CSR"
  | "NO_PENDING_KEY"
  | "BAD_CRL"
  | "STALE_CRL"
  | "NO_CRL"
  | "RENEW_REFUSED"
  | "BAD_TOKEN"
  | "CA_KEY_LOCKED"
  | "NOT_ISSUED";

export class PkiError extends Error {
  constructor(
    readonly code: PkiErrorCode,
    message: string,
    readonly hint?: string,
  ) {
    super(message);
    this.name = "PkiError";
  }
}

const INIT_HINT = "run 'a2a-node init-pki --name NAME' (or --bundle FILE)";

/** Named constructors, so the wording of each error lives here and nowhere else. */
export const pkiErrors = {
  keyExists: (path: string) =>
    new PkiError(
      "KEY_EXISTS",
      `refusing to overwrite ${path}: it already exists`,
      "use another --home, or remove the file yourself if you really mean to replace this node's identity",
    ),
  certExists: (path: string) =>
    new PkiError(
      "CERT_EXISTS",
      `refusing to overwrite ${path}: it already exists`,
      "use another --home, or remove the file yourself if you really mean to replace this node's identity",
    ),
  fileExists: (path: string) =>
    new PkiError(
      "FILE_EXISTS",
      `refusing to overwrite ${path}: it already exists`,
      "choose another path, or pass --force to replace it",
    ),
  caMismatch: (path: string, other = "the bundle") =>
    new PkiError(
      "CA_MISMATCH",
      `${path} holds a different fleet CA than ${other}`,
      "a home belongs to one fleet: use a fresh --home, or ask for a certificate issued by this home's CA",
    ),
  noCa: (path: string, hint = INIT_HINT) => new PkiError("NO_CA", `no fleet CA certificate at ${path}`, hint),
  noCaKey: (path: string, hint: string) => new PkiError("NO_CA_KEY", `no fleet CA key at ${path}`, hint),
  noNodeCert: (path: string, hint = INIT_HINT) => new PkiError("NO_NODE_CERT", `no node certificate at ${path}`, hint),
  noNodeKey: (path: string) =>
    new PkiError(
      "NO_NODE_KEY",
      `no node key at ${path} (the certificate is there, its key is not)`,
      "restore the key from a backup, or start over in a fresh --home with 'a2a-node init-pki'",
    ),
  badBundle: (path: string, reason: string) =>
    new PkiError(
      "BAD_BUNDLE",
      `bad bundle ${path}: ${reason}`,
      "ask the CA machine for a fresh one: a2a-node pki issue NAME --out FILE",
    ),
  badName: (name: string, rule: string) =>
    new PkiError(
      "BAD_NAME",
      `invalid name ${JSON.stringify(name)}: ${rule}`,
      "use letters, digits and inner dashes, e.g. 'build-box-2'",
    ),
  reservedName: (name: string, why: string) =>
    new PkiError(
      "RESERVED_NAME",
      `the name "${name}" is reserved: ${why}`,
      "choose another name for this node, such as the machine's host name",
    ),
  badSan: (san: string, reason = "not a DNS name or an IP address") =>
    new PkiError(
      "BAD_SAN",
      `invalid --san ${JSON.stringify(san)}: ${reason}`,
      "give a DNS name (host.example.com, *.example.com) or an IP (10.0.0.5, fd00::5)",
    ),
  badDays: (what: string, days: number, max: number) =>
    new PkiError(
      "BAD_DAYS",
      `invalid ${what} validity ${days}: must be a whole number of days from 1 to ${max}`,
      "pass a number of days such as 365",
    ),
  badPem: (what: string) =>
    new PkiError(
      "BAD_PEM",
      `${what} is not a valid PEM certificate`,
      "check that the file was not truncated or edited",
    ),
  badKey: (what: string, expected = "a PKCS#8 ECDSA P-256 private key") =>
    new PkiError("BAD_KEY", `${what} is not ${expected}`, "check that the file was not truncated or edited"),
  keyMismatch: (keyWhat: string, certWhat: string) =>
    new PkiError(
      "KEY_MISMATCH",
      `${keyWhat} does not belong to ${certWhat}`,
      "the key and certificate come from different identities; restore the matching pair",
    ),
  notACa: (what: string) =>
    new PkiError("NOT_A_CA", `${what} is not a CA certificate`, "point at the fleet CA certificate (certs/ca.crt)"),
  outlivesCa: (days: number, caNotAfter: Date, maxDays: number) =>
    new PkiError(
      "OUTLIVES_CA",
      `a certificate valid for ${days} days would outlive the fleet CA (it expires ${caNotAfter.toISOString()})`,
      maxDays >= 1 ? `pass --days ${maxDays} or less` : "the fleet CA is about to expire; create a new fleet",
    ),
  insecurePermissions: (path: string, mode: number) =>
    new PkiError(
      "INSECURE_PERMISSIONS",
      `refusing to use ${path}: it is readable by others (mode ${(mode & 0o777).toString(8).padStart(4, "0")})`,
      `chmod 600 ${path}`,
    ),
  notIssuedByCa: (what: string, reason: string) =>
    new PkiError(
      "NOT_ISSUED_BY_CA",
      `${what} was not issued by the fleet CA: ${reason}`,
      "use a certificate issued by this fleet's CA (a2a-node pki issue)",
    ),
  expired: (
    what: string,
    notAfter: Date,
    hint = "issue a new certificate on the CA machine: a2a-node pki issue NAME --out FILE",
  ) => new PkiError("EXPIRED", `${what} expired on ${notAfter.toISOString()}`, hint),
  notYetValid: (what: string, notBefore: Date) =>
    new PkiError(
      "NOT_YET_VALID",
      `${what} is not valid before ${notBefore.toISOString()}`,
      "check this machine's clock",
    ),
  nameHasCert: (name: string, held: { serial: string; notAfter: Date }) =>
    new PkiError(
      "NAME_HAS_CERT",
      `"${name}" already has a valid certificate (serial ${held.serial}, expires ${held.notAfter.toISOString()})`,
      `pass --replace to issue a new one and revoke the old one, or renew it on that machine with 'a2a-node pki renew' ('a2a-node pki list' shows what this CA issued)`,
    ),
  badCsr: (what: string, reason: string) =>
    new PkiError(
      "BAD_CSR",
      `${what} cannot be signed: ${reason}`,
      "make a new one on that machine: a2a-node init-pki --name NAME --csr FILE",
    ),
  noPendingKey: (path: string) =>
    new PkiError(
      "NO_PENDING_KEY",
      `no node key at ${path} for this certificate`,
      "import it in the home that ran 'a2a-node init-pki --name NAME --csr FILE' (the key never leaves that machine)",
    ),
  badCrl: (what: string, reason: string) =>
    new PkiError(
      "BAD_CRL",
      `${what} is not a revocation list of this fleet: ${reason}`,
      "ask the CA machine for a fresh one: a2a-node pki export-crl --out FILE",
    ),
  staleCrl: (what: string, number: number, installed: number) =>
    new PkiError(
      "STALE_CRL",
      `${what} is older than the revocation list installed here (number ${number}, installed ${installed})`,
      "ask the CA machine for its current list: a2a-node pki export-crl --out FILE",
    ),
  noCrl: (path: string) =>
    new PkiError(
      "NO_CRL",
      `no revocation list at ${path}`,
      "nothing was revoked yet, or import one: a2a-node pki import-crl FILE",
    ),
  renewRefused: (reason: string) =>
    new PkiError(
      "RENEW_REFUSED",
      `renewal refused: ${reason}`,
      "renew from the machine that holds the certificate, with its own key; or issue anew on the CA machine (pki issue NAME --replace)",
    ),
  badToken: (reason: string) =>
    new PkiError(
      "BAD_TOKEN",
      `join token refused: ${reason}`,
      "ask the CA machine for a new one: a2a-node pki token --name NAME",
    ),
  caKeyLocked: (path: string, reason: string) =>
    new PkiError(
      "CA_KEY_LOCKED",
      `cannot use the fleet CA key ${path}: ${reason}`,
      "set A2A_NODE_CA_PASSPHRASE, or ca_passphrase_file (a 0600 file), or run the command in a terminal to be asked",
    ),
  notIssued: (what: string) =>
    new PkiError(
      "NOT_ISSUED",
      `this CA has no record of a certificate ${what}`,
      "'a2a-node pki list' shows every certificate this CA issued",
    ),
  readFailed: (path: string, reason: string) =>
    new PkiError("READ_FAILED", `cannot read ${path}: ${reason}`, "check the path and its permissions"),
} as const;
