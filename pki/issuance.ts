import { existsSync } from "node:fs";
import { pkiErrors } from "./errors";
import { inspectCert } from "./inspect";
import { issueLeaf, signPublicKey } from "./leaf";
import { CaRegistry, normalizeSerial, type IssueKind, type IssuedCert } from "./registry";
import { publishCrl } from "./crl-publish";
import { readPublic } from "./secure-file";
import { readCaKey, type Unlock } from "./ca-key";
import type { CertAndKey } from "./cert-params";

/** The files of a home that holds the fleet CA (HomePaths fits). */
export interface CaPaths {
  caCert: string;
  caKey: string;
  caRegistry: string;
  nodeCert: string;
  /** The revocation list this home serves and enforces (certs/crl.pem). */
  crl: string;
  /** The CA key's passphrase, asked for only if the key is encrypted. */
  unlock?: Unlock;
  /** How long a revocation list signed here is valid (its next update); default DEFAULT_CRL_VALID_FOR_MS. */
  crlValidForMs?: number;
}

/**
 * The registry setting holding the fleet's SPIFFE trust domain; when set, every certificate carries
 * spiffe://DOMAIN/NAME.
 */
export const SPIFFE_DOMAIN = "spiffe_domain";

export function spiffeId(domain: string, name: string): string {
  return `spiffe://${domain}/${name}`;
}

export const NO_CA_KEY_FOR_ISSUE =
  "run this on the machine that ran 'a2a-node init-pki' first (it holds secrets/ca.key)";

/**
 * Opens the CA's registry of issued certificates, creating it on first use. A registry created for a CA that
 * already existed (a home made before the registry) starts with the one certificate it can know of: the CA
 * home's own node certificate.
 */
export function openCaRegistry(paths: CaPaths): CaRegistry {
  if (!existsSync(paths.caKey)) throw pkiErrors.noCaKey(paths.caKey, NO_CA_KEY_FOR_ISSUE);
  if (!existsSync(paths.caCert)) throw pkiErrors.noCa(paths.caCert);
  const fresh = !existsSync(paths.caRegistry);
  const registry = CaRegistry.open(paths.caRegistry);
  if (fresh && existsSync(paths.nodeCert)) {
    try {
      const own = inspectCert(readPublic(paths.nodeCert), paths.nodeCert);
      const ca = inspectCert(readPublic(paths.caCert), paths.caCert);
      if (own.issuerCn === ca.subjectCn)
        registry.transaction(() => registry.record(recordOf(readPublic(paths.nodeCert), "init", new Date())));
    } catch {
      // An unreadable node certificate is reported by whatever needs it; the registry starts empty.
    }
  }
  return registry;
}

export interface RecordedIssueOptions {
  name: string;
  /** Every SAN, the name's own included (signPublicKey adds the name if missing). */
  sans: string[];
  days: number;
  how: IssueKind;
  /** Issue even though NAME holds a valid certificate, and revoke that one. */
  replace?: boolean;
  /**
   * A renewal by the holder of the valid certificate with this serial (the one it presented): NAME's valid
   * certificates do not block the issue. The one presented stays valid, so the holder keeps working until it
   * uses the new one (see supersedeInUse); every other valid certificate of NAME (an earlier renewal never put
   * to use) is revoked, superseded. So a name has at most two valid certificates, whatever number of renewals.
   */
  renewedFrom?: string;
  /** A public key made elsewhere (SPKI PEM or CryptoKey); without it a key pair is made here. */
  publicKey?: CryptoKey | string;
  now?: Date;
  /**
   * Hands the new certificate over (writes the bundle or the certificate file) inside the registry's
   * transaction: if it throws, nothing is recorded and nothing is revoked.
   */
  deliver?(leaf: CertAndKey | { certPem: string; keyPem?: undefined }): void;
}

export interface RecordedIssue {
  certPem: string;
  keyPem?: string;
  record: IssuedCert;
  /** Certificates of the same name this issue revoked (--replace). */
  revoked: IssuedCert[];
}

/**
 * Issues a certificate the way every path into the fleet must: refused when NAME already holds a valid
 * certificate unless `replace` (which revokes it), and recorded in the CA's registry in the same transaction
 * as that revocation and the delivery; a revocation then signs a new revocation list into the home.
 */
export async function issueRecorded(
  paths: CaPaths,
  registry: CaRegistry,
  opts: RecordedIssueOptions,
): Promise<RecordedIssue> {
  const now = opts.now ?? new Date();
  const renewal = opts.renewedFrom !== undefined;
  if (!renewal) refuseIfHeld(registry, opts.name, now, opts.replace);
  const ca: CertAndKey = { certPem: readPublic(paths.caCert), keyPem: await readCaKey(paths.caKey, paths.unlock) };
  const domain = registry.setting(SPIFFE_DOMAIN);
  const leafOpts = {
    ca,
    name: opts.name,
    sans: opts.sans,
    days: opts.days,
    now,
    uris: domain ? [spiffeId(domain, opts.name)] : [],
  };
  const leaf =
    opts.publicKey !== undefined
      ? { certPem: await signPublicKey({ ...leafOpts, publicKey: opts.publicKey }) }
      : await issueLeaf(leafOpts);
  const record = {
    ...recordOf(leaf.certPem, opts.how, now),
    ...(renewal ? { renewedFrom: normalizeSerial(opts.renewedFrom!) } : {}),
  };
  const revoked = registry.transaction(() => {
    // Again inside the transaction: another process may have issued this name while we were signing.
    const held = renewal
      ? registry.validFor(opts.name, now).filter((c) => c.serial !== record.renewedFrom)
      : refuseIfHeld(registry, opts.name, now, opts.replace);
    registry.record(record);
    const gone = registry.revoke(
      held.map((c) => c.serial),
      now,
      renewal
        ? `superseded: ${opts.name} renewed serial ${record.renewedFrom} as ${record.serial}`
        : `replaced by ${record.serial}`,
    );
    opts.deliver?.(leaf);
    return gone;
  });
  if (revoked.length > 0) await publishCrl(paths, registry, now);
  return { certPem: leaf.certPem, keyPem: "keyPem" in leaf ? leaf.keyPem : undefined, record, revoked };
}

function refuseIfHeld(registry: CaRegistry, name: string, now: Date, replace: boolean | undefined): IssuedCert[] {
  const held = registry.validFor(name, now);
  if (held.length > 0 && !replace) throw pkiErrors.nameHasCert(name, held[held.length - 1]);
  return held;
}

export function recordOf(
  certPem: string,
  how: IssueKind,
  issuedAt: Date,
): Omit<IssuedCert, "revokedAt" | "revokeReason"> {
  const info = inspectCert(certPem);
  return {
    name: info.subjectCn,
    serial: info.serialNumber,
    fingerprint256: info.fingerprint256,
    sans: info.sans,
    notBefore: info.notBefore,
    notAfter: info.notAfter,
    issuedAt,
    how,
  };
}
