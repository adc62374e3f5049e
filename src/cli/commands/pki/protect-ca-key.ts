import { UsageError } from "../../errors";
import { parseFlags } from "../../flags";
import { homePaths } from "../../../home";
import { pkiErrors, protectCaKey } from "../../../../pki";
import { existsSync } from "node:fs";
import { newPassphrase } from "../../ca-unlock";
import type { Subcommand } from "../../command";

const flags = {
  json: { type: "boolean" },
} as const;

export const protectCaKeySub: Subcommand = {
  name: "protect-ca-key",
  usage: "pki protect-ca-key",
  flags: flags,
  summary: `on the CA machine: encrypt secrets/ca.key with a passphrase (A2A_NODE_CA_PASSPHRASE, or typed
            twice). Commands that sign then ask for it; a CA node's serve reads it from
            A2A_NODE_CA_PASSPHRASE or ca_passphrase_file to renew and enroll`,
  flagHelp: "",
  examples: `  # keep the CA key under a passphrase
  A2A_NODE_CA_PASSPHRASE=... a2a-node pki protect-ca-key`,
  async run(argv, ctx) {
    const { flags: f, positionals } = parseFlags(argv, flags);
    if (positionals.length > 0) throw new UsageError(`unexpected argument '${positionals[0]}'`);
    const paths = homePaths(ctx.home);
    if (!existsSync(paths.caKey))
      throw pkiErrors.noCaKey(paths.caKey, "run this on the machine that holds the fleet CA");
    protectCaKey(paths.caKey, await newPassphrase(ctx));
    ctx.io.stdout.write(
      f.json
        ? JSON.stringify({ encrypted: paths.caKey }) + "\n"
        : `encrypted ${paths.caKey}\nnext: keep the passphrase safe; without it this CA cannot sign again\n`,
    );
    return 0;
  },
};
