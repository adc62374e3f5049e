import { chmodSync, existsSync, mkdirSync, statSync } from "node:fs";
import { hostname } from "node:os";
import { dirname } from "node:path";
import { PkiError, pkiErrors } from "./errors";
import { assertKeyMatchesCert } from "./keys";
import { createCa, defaultCaName } from "./ca";
import { issueLeaf } from "./leaf";
import { issueRecorded, openCaRegistry, recordOf, SPIFFE_DOMAIN, spiffeId } from "./issuance";
import { CaRegistry } from "./registry";
import type { IssuedCert } from "./registry";
import { encryptKeyPem, readCaKey, type Unlock } from "./ca-key";
import { inspectCert } from "./inspect";
import { type Bundle, BUNDLE_FORMAT, readBundle, writeBundle } from "./bundle";
import { checkTrustDomain, isValidSan, normalizeNodeName, normalizeSans, checkDays } from "./names";
import { PUBLIC_MODE, SECRET_MODE, readPublic, writeFileAtomic } from "./secure-file";
import type { CertAndKey } from "./cert-params";
export { loadNodeIdentity, type NodeIdentity } from "./identity";

/** The files of a node home the PKI uses (src/home.ts HomePaths satisfies this). */
export interface PkiPaths {
  caCert: string;
  caKey: string;
  /** The CA's record of what it issued and revoked (only on the CA machine). */
  caRegistry: string;
  nodeCert: string;
  nodeKey: string;
  /** The fleet's revocation list this home enforces (and, on the CA machine, serves). */
  crl: string;
  /** The CA key's passphrase, asked for only if the key is encrypted. */
  unlock?: Unlock;
}

export interface CaSummary {
  created: boolean;
  subjectCn: string;
  fingerprint256: string;
  notAfter: Date;
  certPath: string;
  /** Present only when this home holds the CA key (it can issue certificates). */
  keyPath?: string;
}

export interface NodeSummary {
  name: string;
  sans: string[];
  fingerprint256: string;
  notAfter: Date;
  certPath: string;
  keyPath: string;
}

export interface InitResult {
  ca: CaSummary;
  node: NodeSummary;
}

export interface InitPkiOptions {
  name: string;
  sans?: string[];
  days?: number;
  caDays?: number;
  /** Defaults to os.hostname(); added as a SAN only when it is a valid DNS name. */
  hostname?: string;
  /** Encrypt a newly created CA key with this passphrase (secrets/ca.key then holds an encrypted PKCS#8). */
  caPassphrase?: string;
  /** The fleet's SPIFFE trust domain: every certificate the CA issues then carries spiffe://DOMAIN/NAME. */
  spiffeDomain?: string;
  now?: Date;
}

const NO_CA_KEY_FOR_INIT =
  "this home has a fleet CA certificate but not its key (it was set up from a bundle): install a bundle with 'a2a-node init-pki --bundle FILE', or use a fresh --home";

/**
 * Gives a home its identity: creates the fleet CA if the home has none, then this node's key and
 * certificate signed by it. SANs: the name, localhost, 127.0.0.1, this machine's hostname, and `sans`.
 * Never replaces an existing node key or certificate (KEY_EXISTS / CERT_EXISTS).
 *
 * @example await initPki(homePaths(home), { name: "alice", sans: ["10.0.0.5"] })
 */
export async function initPki(paths: PkiPaths, opts: InitPkiOptions): Promise<InitResult> {
  // Check every input before touching the disk, so a typo never leaves a half-made home.
  const name = normalizeNodeName(opts.name);
  const host = (opts.hostname ?? hostname()).toLowerCase();
  const sans = ["localhost", "127.0.0.1", ...(isValidSan(host) ? [host] : []), ...(opts.sans ?? [])];
  normalizeSans(sans);
  const days = checkDays(opts.days ?? 365, "certificate");
  const caDays = checkDays(opts.caDays ?? 3650, "CA");
  const wantedDomain = opts.spiffeDomain !== undefined ? checkTrustDomain(opts.spiffeDomain) : undefined;
  refuseExistingNode(paths);

  const hasCaCert = existsSync(paths.caCert);
  const hasCaKey = existsSync(paths.caKey);
  if (hasCaCert && !hasCaKey) throw pkiErrors.noCaKey(paths.caKey, NO_CA_KEY_FOR_INIT);
  if (!hasCaCert && hasCaKey)
    throw pkiErrors.noCa(paths.caCert, `restore it from a backup; ${paths.caKey} is there without it`);
  prepareDirs(paths);

  // Make everything in memory first, so a refusal (e.g. a leaf that would outlive the CA) writes nothing.
  const ca = hasCaCert
    ? await readCa(paths)
    : await createCa({ name: defaultCaName(name), days: caDays, now: opts.now });
  let domain = wantedDomain;
  if (domain === undefined && hasCaCert && existsSync(paths.caRegistry)) {
    const existing = CaRegistry.open(paths.caRegistry);
    domain = existing.setting(SPIFFE_DOMAIN);
    existing.close();
  }
  const leaf = await issueLeaf({ ca, name, sans, days, now: opts.now, uris: domain ? [spiffeId(domain, name)] : [] });
  if (!hasCaCert) {
    // Key first: a certificate without its key is useless, a key without its certificate is just retried.
    const keyPem = opts.caPassphrase !== undefined ? encryptKeyPem(ca.keyPem, opts.caPassphrase) : ca.keyPem;
    writeFileAtomic(paths.caKey, keyPem, { mode: SECRET_MODE, onExists: pkiErrors.keyExists });
    writeFileAtomic(paths.caCert, ca.certPem, { mode: PUBLIC_MODE, onExists: pkiErrors.certExists });
  }
  writeNode(paths, leaf);
  // The CA records every certificate it issues, its own node's first.
  const registry = openCaRegistry(paths);
  try {
    const own = recordOf(leaf.certPem, "init", opts.now ?? new Date());
    registry.transaction(() => {
      if (!registry.bySerial(own.serial)) registry.record(own);
      if (wantedDomain !== undefined) registry.setSetting(SPIFFE_DOMAIN, wantedDomain);
    });
  } finally {
    registry.close();
  }
  return { ca: caSummary(paths, ca.certPem, !hasCaCert, true), node: nodeSummary(paths, leaf.certPem) };
}

/**
 * Sets up a home from a bundle made by `pki issue` on the CA machine. The home gets the CA certificate
 * (not its key) and the node's key and certificate. Refuses an existing node identity, and a home that
 * already belongs to another fleet (CA_MISMATCH).
 */
export async function installBundle(
  paths: PkiPaths,
  bundlePath: string,
  opts: { now?: Date } = {},
): Promise<InitResult> {
  const bundle = await readBundle(bundlePath, opts);
  refuseExistingNode(paths);
  const caFingerprint = inspectCert(bundle.caCert).fingerprint256;
  const hasCaCert = existsSync(paths.caCert);
  if (hasCaCert && inspectCert(readPublic(paths.caCert), paths.caCert).fingerprint256 !== caFingerprint)
    throw pkiErrors.caMismatch(paths.caCert);
  const hasCaKey = existsSync(paths.caKey);
  if (hasCaKey) {
    try {
      assertKeyMatchesCert(await readCaKey(paths.caKey, paths.unlock), bundle.caCert, paths.caKey, "the bundle's CA");
    } catch (err) {
      if (err instanceof PkiError && err.code === "KEY_MISMATCH") throw pkiErrors.caMismatch(paths.caKey);
      throw err;
    }
  }
  prepareDirs(paths);
  if (!hasCaCert) writeFileAtomic(paths.caCert, bundle.caCert, { mode: PUBLIC_MODE, onExists: pkiErrors.certExists });
  writeNode(paths, { certPem: bundle.cert, keyPem: bundle.key });
  return { ca: caSummary(paths, bundle.caCert, false, hasCaKey), node: nodeSummary(paths, bundle.cert) };
}

export interface IssueBundleOptions {
  name: string;
  sans?: string[];
  days?: number;
  /** Where to write the bundle (0600). */
  out: string;
  /** Replace an existing file at `out`. */
  overwrite?: boolean;
  /** Issue although NAME holds a valid certificate, revoking that one. */
  replace?: boolean;
  now?: Date;
}

export interface IssueResult extends Omit<NodeSummary, "certPath" | "keyPath"> {
  out: string;
  serial: string;
  /** Certificates of this name that the issue revoked (--replace). */
  revoked: IssuedCert[];
}

/**
 * On the CA machine: issues a key and certificate for another machine and writes them, with the CA
 * certificate, to a bundle file. SANs: the name, localhost, 127.0.0.1 and `sans`.
 *
 * @example await issueBundle(paths, { name: "bob", sans: ["10.0.0.6"], out: "bob.bundle" })
 */
export async function issueBundle(paths: PkiPaths, opts: IssueBundleOptions): Promise<IssueResult> {
  const name = normalizeNodeName(opts.name);
  const sans = ["localhost", "127.0.0.1", ...(opts.sans ?? [])];
  normalizeSans(sans);
  const days = checkDays(opts.days ?? 365, "certificate");
  if (!opts.overwrite && existsSync(opts.out)) throw pkiErrors.fileExists(opts.out);
  const registry = openCaRegistry(paths);
  try {
    const caCert = readPublic(paths.caCert);
    const issued = await issueRecorded(paths, registry, {
      name,
      sans,
      days,
      how: "bundle",
      replace: opts.replace,
      now: opts.now,
      deliver: (leaf) =>
        writeBundle(
          opts.out,
          { format: BUNDLE_FORMAT, name, caCert, cert: leaf.certPem, key: leaf.keyPem as string } satisfies Bundle,
          { overwrite: opts.overwrite },
        ),
    });
    const r = issued.record;
    return {
      name,
      sans: r.sans,
      fingerprint256: r.fingerprint256,
      notAfter: r.notAfter,
      serial: r.serial,
      out: opts.out,
      revoked: issued.revoked,
    };
  } finally {
    registry.close();
  }
}

export function refuseExistingNode(paths: PkiPaths): void {
  if (existsSync(paths.nodeKey)) throw pkiErrors.keyExists(paths.nodeKey);
  if (existsSync(paths.nodeCert)) throw pkiErrors.certExists(paths.nodeCert);
}

async function readCa(paths: PkiPaths): Promise<CertAndKey> {
  return { certPem: readPublic(paths.caCert), keyPem: await readCaKey(paths.caKey, paths.unlock) };
}

function writeNode(paths: PkiPaths, leaf: CertAndKey): void {
  writeFileAtomic(paths.nodeKey, leaf.keyPem, { mode: SECRET_MODE, onExists: pkiErrors.keyExists });
  writeFileAtomic(paths.nodeCert, leaf.certPem, { mode: PUBLIC_MODE, onExists: pkiErrors.certExists });
}

/** Key and certificate folders exist and are private (0700), as src/home.ts lays them out. */
export function prepareDirs(paths: Pick<PkiPaths, "caKey" | "nodeKey" | "caCert" | "nodeCert">): void {
  for (const dir of new Set([
    dirname(paths.caKey),
    dirname(paths.nodeKey),
    dirname(paths.caCert),
    dirname(paths.nodeCert),
  ])) {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    if ((statSync(dir).mode & 0o077) !== 0) chmodSync(dir, 0o700);
  }
}

export function caSummary(
  paths: Pick<PkiPaths, "caCert" | "caKey">,
  certPem: string,
  created: boolean,
  hasKey: boolean,
): CaSummary {
  const info = inspectCert(certPem);
  return {
    created,
    subjectCn: info.subjectCn,
    fingerprint256: info.fingerprint256,
    notAfter: info.notAfter,
    certPath: paths.caCert,
    ...(hasKey ? { keyPath: paths.caKey } : {}),
  };
}

export function nodeSummary(paths: Pick<PkiPaths, "nodeCert" | "nodeKey">, certPem: string): NodeSummary {
  const info = inspectCert(certPem);
  return {
    name: info.subjectCn,
    sans: info.sans,
    fingerprint256: info.fingerprint256,
    notAfter: info.notAfter,
    certPath: paths.nodeCert,
    keyPath: paths.nodeKey,
  };
}
