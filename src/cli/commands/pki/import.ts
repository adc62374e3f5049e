import { resolve } from "node:path";
import { UsageError } from "../../errors";
import { parseFlags } from "../../flags";
import { ensureHome, homePaths } from "../../../home";
import { importCertificate } from "../../../../pki";
import { expiresIn } from "./text";
import type { Subcommand } from "../../command";

const flags = {
  ca: { type: "string", value: "CA_CERT" },
  json: { type: "boolean" },
} as const;

export const importSub: Subcommand = {
  name: "import",
  usage: "pki import CERT --ca CA_CERT [--json]",
  flags: flags,
  summary: `on the machine that ran 'init-pki --csr': install the certificate the CA machine signed,
            after checking that CA_CERT issued it and that it belongs to this home's key`,
  flagHelp: `  --ca CA_CERT        the fleet CA certificate (the CA machine's certs/ca.crt); required`,
  examples: `  # back on carol, with the certificate the CA machine signed (pki sign)
  a2a-node pki import carol.crt --ca ca.crt`,
  async run(argv, ctx) {
    const { flags: f, positionals } = parseFlags(argv, flags);
    if (positionals.length === 0) throw new UsageError("pki import needs the certificate file (CERT)");
    if (positionals.length > 1) throw new UsageError(`unexpected argument '${positionals[1]}'`);
    if (f.ca === undefined) throw new UsageError("pki import needs --ca CA_CERT (the fleet CA certificate)");
    const r = await importCertificate(ensureHome(homePaths(ctx.home)), {
      certPath: resolve(positionals[0]),
      caPath: resolve(f.ca),
    });
    if (f.json)
      ctx.io.stdout.write(JSON.stringify({ ca: { ...r.ca, keyPath: r.ca.keyPath ?? null }, node: r.node }) + "\n");
    else
      ctx.io.stdout.write(
        [
          `installed "${r.node.name}"`,
          `  SANs            ${r.node.sans.join(", ")}`,
          `  fingerprint     ${r.node.fingerprint256}`,
          `  expires         ${expiresIn(r.node.notAfter)}`,
          `  certificate     ${r.node.certPath}`,
          `  key             ${r.node.keyPath}`,
          `fleet CA "${r.ca.subjectCn}"`,
          `  fingerprint     ${r.ca.fingerprint256}`,
          `next: a2a-node serve`,
        ].join("\n") + "\n",
      );
    return 0;
  },
};
