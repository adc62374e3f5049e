import { UsageError } from "../../errors";
import { parseFlags } from "../../flags";
import { homePaths } from "../../../home";
import { loadNodeIdentity, type NodeIdentity } from "../../../../pki/identity";
import { existsSync } from "node:fs";
import { readRevocationList } from "../../../../pki/crl-reader";
import { readCrlSource, type CrlSource } from "../../../../pki/crl-source";
import { keyPinOf } from "../../../../pki/key-pin";
import { readPublic } from "../../../../pki/secure-file";
import { expiresIn, utc } from "./text";
import type { Subcommand } from "../../command";

const flags = {
  json: { type: "boolean" },
} as const;

export const show: Subcommand = {
  name: "show",
  usage: "pki show [--json]",
  flags: flags,
  summary: `print this node's identity: name, SANs, key pin (what other nodes pin), fingerprint, expiry,
            fleet CA, whether this home holds the CA key, and the revocation list in force: its number,
            when it was issued, its next update, how many certificates it revokes, and where it came
            from (this home's CA, fetched from ca_peer, or imported)`,
  flagHelp: "",
  examples: `  # check this node's identity, or feed it to a script
  a2a-node pki show
  a2a-node pki show --json | jq -r .fingerprint256`,
  async run(argv, ctx) {
    const { flags: f, positionals } = parseFlags(argv, flags);
    if (positionals.length > 0) throw new UsageError(`unexpected argument '${positionals[0]}'`);
    const paths = homePaths(ctx.home);
    const id = await loadNodeIdentity(paths, { allowExpired: true });
    const crl = crlState(paths, id.caPem);
    ctx.io.stdout.write(
      f.json ? JSON.stringify({ ...showJson(id, paths), crl }) + "\n" : showText(id, paths) + crlText(crl),
    );
    return 0;
  },
};

function showJson(id: NodeIdentity, paths: ReturnType<typeof homePaths>) {
  return {
    name: id.name,
    sans: id.sans,
    uris: id.uris ?? [],
    keyPin: keyPinOf(id.certPem),
    fingerprint256: id.fingerprint256,
    serialNumber: id.serialNumber,
    notBefore: id.notBefore,
    notAfter: id.notAfter,
    expired: id.notAfter.getTime() < Date.now(),
    certPath: paths.nodeCert,
    keyPath: paths.nodeKey,
    ca: {
      subjectCn: id.ca.subjectCn,
      fingerprint256: id.ca.fingerprint256,
      notAfter: id.ca.notAfter,
      certPath: paths.caCert,
      hasKey: id.hasCaKey,
    },
  };
}

function showText(id: NodeIdentity, paths: ReturnType<typeof homePaths>): string {
  return (
    [
      `node            ${id.name}`,
      `SANs            ${id.sans.join(", ")}`,
      ...(id.uris?.length ? [`SPIFFE ID       ${id.uris.join(", ")}`] : []),
      `key pin         ${keyPinOf(id.certPem)} (renewals keep it; 'peers add --pin' elsewhere pins it)`,
      `fingerprint     ${id.fingerprint256}`,
      `expires         ${expiresIn(id.notAfter)}`,
      `certificate     ${paths.nodeCert}`,
      `key             ${paths.nodeKey}`,
      `fleet CA        ${id.ca.subjectCn}`,
      `CA fingerprint  ${id.ca.fingerprint256}`,
      `CA expires      ${expiresIn(id.ca.notAfter)}`,
      id.hasCaKey
        ? `CA key          ${paths.caKey} (this home can issue: a2a-node pki issue NAME --out FILE)`
        : `CA key          not here (identities are issued on the CA machine)`,
    ].join("\n") + "\n"
  );
}

/** The revocation list installed in this home, for `pki show`; null when there is none. */
export interface CrlState {
  path: string;
  number?: number;
  thisUpdate?: Date;
  nextUpdate?: Date | null;
  revoked?: number;
  /** Where it came from; kind "unknown" when not recorded (a list from before this was kept, or copied by hand). */
  source?: CrlSource | { kind: "unknown" };
  /** Set instead of the above when the file cannot be used (not the fleet CA's, damaged). */
  error?: string;
}

function crlState(paths: ReturnType<typeof homePaths>, caPem: string): CrlState | null {
  if (!existsSync(paths.crl)) return null;
  let list;
  try {
    list = readRevocationList(readPublic(paths.crl), caPem, paths.crl);
  } catch (err) {
    return { path: paths.crl, error: (err as Error).message };
  }
  return {
    path: paths.crl,
    number: list.number,
    thisUpdate: list.thisUpdate,
    nextUpdate: list.nextUpdate ?? null,
    revoked: list.revoked.size,
    source: readCrlSource(paths.crl, list.number) ?? { kind: "unknown" },
  };
}

function crlText(crl: CrlState | null): string {
  const pad = "                ";
  if (!crl)
    return (
      "revocation list none here: nothing is refused as revoked (the CA home writes one at 'pki revoke';\n" +
      pad +
      "a node with ca_peer fetches it from there once the CA has one; or 'pki import-crl FILE')\n"
    );
  if (crl.error) return `revocation list ${crl.path} cannot be used: ${crl.error}\n`;
  const source = crl.source as CrlSource | { kind: "unknown" };
  const from =
    source.kind === "local-ca"
      ? `signed by this home's CA on ${utc(new Date(source.at))}`
      : source.kind === "ca-peer"
        ? `fetched from ca_peer '${source.peer}' on ${utc(new Date(source.at))}${source.checkedAt ? `, still current there on ${utc(new Date(source.checkedAt))}` : ""}`
        : source.kind === "imported"
          ? `imported from ${source.file} on ${utc(new Date(source.at))}`
          : "not recorded (installed before this was kept, or copied in by hand)";
  return (
    [
      `revocation list number ${crl.number}, ${crl.revoked} revoked certificate${crl.revoked === 1 ? "" : "s"}`,
      `${pad}issued ${utc(crl.thisUpdate as Date)}, next update ${crl.nextUpdate ? utc(crl.nextUpdate) : "not set"}`,
      `${pad}from: ${from}`,
      `${pad}${crl.path}`,
    ].join("\n") + "\n"
  );
}
