import { UsageError } from "../../errors";
import { parseFlags } from "../../flags";
import { homePaths } from "../../../home";
import { loadNodeIdentity, type NodeIdentity } from "../../../../pki/identity";
import { expiresIn } from "./text";
import type { PkiSubcommand } from "./subcommand";

const flags = {
  json: { type: "boolean" },
} as const;

export const show: PkiSubcommand = {
  name: "show",
  usage: "pki show [--json]",
  flagSpec: flags,
  summary: `print this node's identity: name, SANs, fingerprint, expiry, fleet CA, whether this home
            holds the CA key`,
  flagHelp: "",
  async run(argv, ctx) {
    const { flags: f, positionals } = parseFlags(argv, flags);
    if (positionals.length > 0) throw new UsageError(`unexpected argument '${positionals[0]}'`);
    const paths = homePaths(ctx.home);
    const id = await loadNodeIdentity(paths, { allowExpired: true });
    ctx.io.stdout.write(f.json ? JSON.stringify(showJson(id, paths)) + "\n" : showText(id, paths));
    return 0;
  },
};

function showJson(id: NodeIdentity, paths: ReturnType<typeof homePaths>) {
  return {
    name: id.name,
    sans: id.sans,
    uris: id.uris ?? [],
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
