import { UsageError } from "../../errors";
import { parseFlags } from "../../flags";
import { homePaths } from "../../../home";
import { checkTrustDomain, openCaRegistry, SPIFFE_DOMAIN } from "../../../../pki";
import type { Subcommand } from "../../command";

const flags = {
  clear: { type: "boolean" },
  json: { type: "boolean" },
} as const;

export const spiffeDomain: Subcommand = {
  name: "spiffe-domain",
  usage: "pki spiffe-domain [DOMAIN | --clear] [--json]",
  flags: flags,
  summary: `on the CA machine: show or set the fleet's SPIFFE trust domain. While set, every certificate
            the CA issues (issue, sign, join, renew) also carries the URI SAN spiffe://DOMAIN/NAME`,
  flagHelp: `  --clear             issue certificates without a SPIFFE ID from now on`,
  examples: `  # give every certificate a SPIFFE ID
  a2a-node pki spiffe-domain fleet.example`,
  async run(argv, ctx) {
    const { flags: f, positionals } = parseFlags(argv, flags);
    if (positionals.length > 1) throw new UsageError(`unexpected argument '${positionals[1]}'`);
    if (f.clear && positionals.length) throw new UsageError("give a DOMAIN or --clear, not both");
    const registry = openCaRegistry(homePaths(ctx.home));
    let domain: string | undefined;
    try {
      if (positionals.length || f.clear) {
        domain = f.clear ? undefined : checkTrustDomain(positionals[0]);
        registry.transaction(() => registry.setSetting(SPIFFE_DOMAIN, domain));
      } else domain = registry.setting(SPIFFE_DOMAIN);
    } finally {
      registry.close();
    }
    if (f.json) ctx.io.stdout.write(JSON.stringify({ spiffeDomain: domain ?? null }) + "\n");
    else
      ctx.io.stdout.write(
        domain
          ? `SPIFFE trust domain: ${domain} (certificates issued from now on carry spiffe://${domain}/NAME; the others get it when they renew)\n`
          : "no SPIFFE trust domain: certificates carry no SPIFFE ID\n",
      );
    return 0;
  },
};
