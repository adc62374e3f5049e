import { existsSync } from "node:fs";
import { resolve } from "node:path";
import { CliError, ExitCode, UsageError } from "../../errors";
import { parseFlags } from "../../flags";
import { homePaths } from "../../../home";
import {
  certDetails,
  fingerprint256,
  PkiError,
  pkiErrors,
  readCsr,
  readPublic,
  readRevocationList,
  verifyIssuedBy,
  type CertDetails,
} from "../../../../pki";
import type { TextSink } from "../../io";
import { expiresIn, utc } from "./text";
import type { Subcommand } from "../../command";

const flags = {
  json: { type: "boolean" },
} as const;

export const inspect: Subcommand = {
  name: "inspect",
  usage: "pki inspect [FILE] [--json]",
  flags: flags,
  summary: `describe a certificate (default: this node's): subject, SANs, serial, fingerprint, validity,
            issuer, key usages, and whether this home's fleet CA issued it; or a request from
            'init-pki --csr': the name and SANs it asks for, once its signature is checked; or a
            revocation list: its number, date and revoked serials, once checked against the fleet CA`,
  flagHelp: "",
  examples: `  a2a-node pki inspect certs/node.crt`,
  async run(argv, ctx) {
    const { flags: f, positionals } = parseFlags(argv, flags);
    if (positionals.length > 1) throw new UsageError(`unexpected argument '${positionals[1]}'`);
    const paths = homePaths(ctx.home);
    const file = positionals[0] !== undefined ? resolve(positionals[0]) : paths.nodeCert;
    if (!existsSync(file))
      throw new CliError(
        `no certificate at ${file}`,
        ExitCode.NotFound,
        positionals[0] === undefined ? "run 'a2a-node init-pki' first, or name a FILE" : "check the path",
      );
    const pem = readPublic(file);
    if (/-----BEGIN (NEW )?CERTIFICATE REQUEST-----/.test(pem)) return inspectRequest(pem, file, f.json, ctx.io.stdout);
    if (/-----BEGIN X509 CRL-----/.test(pem)) return inspectList(pem, file, paths, f.json, ctx.io.stdout);
    const cert = certDetails(pem, file);
    const fleet = existsSync(paths.caCert) ? await fleetVerdict(pem, cert, readPublic(paths.caCert)) : undefined;
    const now = new Date();
    const status = now < cert.notBefore ? "not yet valid" : now > cert.notAfter ? "expired" : "valid";
    if (f.json) {
      ctx.io.stdout.write(JSON.stringify({ file, ...cert, status, fleetCa: fleet ?? null }) + "\n");
      return 0;
    }
    const kind = cert.isCa
      ? "CA certificate"
      : `node certificate${cert.extendedKeyUsages.length ? ` (${cert.extendedKeyUsages.join(", ")})` : " (no extended key usage)"}`;
    const lines = [
      `file          ${file}`,
      `subject       ${cert.subject.replace(/\n/g, ", ")}`,
      `SANs          ${cert.sans.join(", ") || "none"}`,
      ...(cert.uris?.length ? [`URIs          ${cert.uris.join(", ")}`] : []),
      `serial        ${cert.serialNumber}`,
      `fingerprint   ${cert.fingerprint256}`,
      `valid from    ${utc(cert.notBefore)}${status === "not yet valid" ? " (NOT YET VALID)" : ""}`,
      `valid until   ${expiresIn(cert.notAfter, now)}`,
      `issuer        ${cert.issuer.replace(/\n/g, ", ")}`,
      `kind          ${kind}`,
      `fleet CA      ${fleet === undefined ? `no fleet CA in ${paths.caCert} to check against` : fleet.chains ? `issued by this home's fleet CA (${fleet.caFingerprint256})` : `NOT issued by this home's fleet CA: ${fleet.reason}`}`,
    ];
    ctx.io.stdout.write(lines.join("\n") + "\n");
    return 0;
  },
};

interface FleetVerdict {
  chains: boolean;
  reason?: string;
  caFingerprint256: string;
}

async function fleetVerdict(pem: string, cert: CertDetails, caPem: string): Promise<FleetVerdict> {
  const ca = certDetails(caPem, "the fleet CA certificate");
  if (cert.fingerprint256 === ca.fingerprint256)
    return { chains: true, reason: "it is the fleet CA certificate itself", caFingerprint256: ca.fingerprint256 };
  try {
    // Issuer and signature only: whether it is still valid is said on its own line.
    await verifyIssuedBy(pem, caPem, { ignoreValidity: true });
    return { chains: true, caFingerprint256: ca.fingerprint256 };
  } catch (err) {
    if (err instanceof PkiError)
      return {
        chains: false,
        reason: err.message.replace(/^.*? was not issued by the fleet CA: /, ""),
        caFingerprint256: ca.fingerprint256,
      };
    throw err;
  }
}

/** A certificate request, as the CA machine's operator reviews it before 'pki sign'. */
async function inspectRequest(pem: string, file: string, json: boolean, out: TextSink): Promise<number> {
  const csr = await readCsr(pem, file);
  const keyFingerprint = fingerprint256(Buffer.from(csr.publicKeyPem.replace(/-----[^-]+-----|\s/g, ""), "base64"));
  if (json)
    out.write(
      JSON.stringify({
        file,
        kind: "certificate request",
        name: csr.name,
        sans: csr.sans,
        publicKeyFingerprint256: keyFingerprint,
      }) + "\n",
    );
  else
    out.write(
      [
        `file          ${file}`,
        `kind          certificate request (its signature verifies with the key it carries)`,
        `name          ${csr.name}`,
        `SANs asked    ${csr.sans.join(", ") || "none beyond the name"}`,
        `key           ECDSA P-256, SHA-256 of the public key ${keyFingerprint}`,
        `next: on the CA machine, a2a-node pki sign ${file} --out ${csr.name}.crt`,
      ].join("\n") + "\n",
    );
  return 0;
}

/** A revocation list, checked against this home's fleet CA. */
async function inspectList(
  pem: string,
  file: string,
  paths: ReturnType<typeof homePaths>,
  json: boolean,
  out: TextSink,
): Promise<number> {
  if (!existsSync(paths.caCert))
    throw pkiErrors.noCa(
      paths.caCert,
      "a revocation list is checked against the fleet CA: run this in a home of the fleet",
    );
  const list = readRevocationList(pem, readPublic(paths.caCert), file);
  const revoked = [...list.revoked].map(([serial, at]) => ({ serial, revokedAt: at }));
  if (json)
    out.write(
      JSON.stringify({
        file,
        kind: "revocation list",
        number: list.number,
        signed: list.thisUpdate,
        nextUpdate: list.nextUpdate ?? null,
        revoked,
      }) + "\n",
    );
  else
    out.write(
      [
        `file          ${file}`,
        `kind          revocation list number ${list.number}, signed by this home's fleet CA on ${utc(list.thisUpdate)}`,
        ...(revoked.length
          ? revoked.map((r, i) => `${i === 0 ? "revoked      " : "             "} ${r.serial} (on ${utc(r.revokedAt)})`)
          : ["revoked       none"]),
      ].join("\n") + "\n",
    );
  return 0;
}
