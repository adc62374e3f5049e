import { PkiError, pkiErrors } from "./errors";
import { assertKeyMatchesCert } from "./keys";
import { inspectCert, verifyIssuedBy } from "./inspect";
import { SECRET_MODE, readPublic, writeFileAtomic } from "./secure-file";

export const BUNDLE_FORMAT = "a2a-node-bundle/1";

/**
 * What `pki issue` hands to another machine: the fleet CA certificate plus that machine's certificate and
 * private key. It carries a key, so it is written 0600 and should be deleted once installed.
 */
export interface Bundle {
  format: typeof BUNDLE_FORMAT;
  name: string;
  caCert: string;
  cert: string;
  key: string;
}

/** Writes a bundle atomically, 0600; refuses to replace an existing file unless `overwrite`. */
export function writeBundle(path: string, bundle: Bundle, opts: { overwrite?: boolean } = {}): void {
  writeFileAtomic(path, JSON.stringify(bundle, null, 2) + "\n", { mode: SECRET_MODE, overwrite: opts.overwrite });
}

/**
 * Reads and fully checks a bundle before anything is installed from it: the format, each PEM, that the
 * certificate was issued by the bundled CA and is valid now, that the key belongs to the certificate, and
 * that the name matches the certificate's CN. Every failure is BAD_BUNDLE with the precise reason.
 */
export async function readBundle(path: string, opts: { now?: Date } = {}): Promise<Bundle> {
  const text = readPublic(path);
  const fail = (reason: string) => pkiErrors.badBundle(path, reason);
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch {
    // The parser's message may quote the input, which holds a private key: give only the reason.
    throw fail("not JSON");
  }
  if (typeof data !== "object" || data === null || Array.isArray(data)) throw fail("not a JSON object");
  const obj = data as Record<string, unknown>;
  if (obj.format !== BUNDLE_FORMAT)
    throw fail(`format is ${JSON.stringify(obj.format ?? null)}, expected "${BUNDLE_FORMAT}"`);
  for (const field of ["name", "caCert", "cert", "key"] as const) {
    if (typeof obj[field] !== "string" || obj[field] === "") throw fail(`field "${field}" is missing or not a string`);
  }
  const bundle = obj as unknown as Bundle;

  await check(fail, async () => {
    const ca = inspectCert(bundle.caCert, '"caCert"');
    if (!ca.isCa) throw fail('"caCert" is not a CA certificate');
    const cert = inspectCert(bundle.cert, '"cert"');
    await verifyIssuedBy(bundle.cert, bundle.caCert, { now: opts.now, what: '"cert"' });
    assertKeyMatchesCert(bundle.key, bundle.cert, '"key"', '"cert"');
    if (cert.subjectCn !== bundle.name)
      throw fail(`"name" is "${bundle.name}" but the certificate is for "${cert.subjectCn}"`);
  });
  return { format: BUNDLE_FORMAT, name: bundle.name, caCert: bundle.caCert, cert: bundle.cert, key: bundle.key };
}

/** Re-labels any PKI error raised while checking as BAD_BUNDLE, keeping its message as the reason. */
async function check(fail: (reason: string) => PkiError, body: () => Promise<void>): Promise<void> {
  try {
    await body();
  } catch (err) {
    if (err instanceof PkiError && err.code !== "BAD_BUNDLE") throw fail(err.message);
    throw err;
  }
}
