import { existsSync } from "node:fs";
import { resolve } from "node:path";
import { CliError, UsageError } from "../../errors";
import { parseFlags } from "../../flags";
import { homePaths } from "../../../home";
import { inspectCert, readPublic } from "../../../../pki";
import { daysLeft, needsRenewal, renewalDue } from "../../../../pki/renewal-policy";
import { utc } from "./text";
import type { Subcommand } from "../../command";

const flags = {
  within: { type: "number", value: "DAYS" },
  json: { type: "boolean" },
} as const;

/** Exit codes of needs-renewal, as step's `certificate needs-renewal` has them (a timer runs renew on 0). */
export const NEEDS_RENEWAL_EXIT = { needed: 0, notNeeded: 1, usage: 2, noFile: 3, error: 255 } as const;

export const needsRenewalSub: Subcommand = {
  name: "needs-renewal",
  usage: "pki needs-renewal [FILE] [--within DAYS] [--json]",
  flags: flags,
  summary: `exit 0 when a certificate (default: this node's) should be renewed now: two thirds of its
            lifetime have passed, or it expires within --within DAYS, or it has expired; exit 1 when
            not. For timers: a2a-node pki needs-renewal && a2a-node pki renew`,
  flagHelp: `  --within DAYS       renew when it expires within DAYS days, instead of at two thirds of its lifetime`,
  examples: `  # in a daily timer, for a node that does not run serve
  a2a-node pki needs-renewal && a2a-node pki renew`,
  async run(argv, ctx) {
    const { flags: f, positionals } = parseFlags(argv, flags);
    if (positionals.length > 1) throw new UsageError(`unexpected argument '${positionals[1]}'`);
    if (f.within !== undefined && !(Number.isFinite(f.within) && f.within >= 0))
      throw new UsageError(`--within must be a number of days, 0 or more (got ${f.within})`);
    const file = positionals[0] !== undefined ? resolve(positionals[0]) : homePaths(ctx.home).nodeCert;
    if (!existsSync(file))
      throw new CliError(
        `no certificate at ${file}`,
        NEEDS_RENEWAL_EXIT.noFile,
        "run 'a2a-node init-pki' first, or name a FILE",
      );
    let cert;
    try {
      cert = inspectCert(readPublic(file), file);
    } catch (err) {
      // Exit 1 means "no renewal needed": an unreadable file must not look like that to a timer.
      throw new CliError((err as Error).message, NEEDS_RENEWAL_EXIT.error, (err as { hint?: string }).hint);
    }
    const now = new Date();
    const needed = needsRenewal(cert, now, f.within);
    const due = f.within !== undefined ? new Date(cert.notAfter.getTime() - f.within * 86_400_000) : renewalDue(cert);
    const left = daysLeft(cert.notAfter, now);
    if (f.json)
      ctx.io.stdout.write(
        JSON.stringify({ file, needsRenewal: needed, notAfter: cert.notAfter, renewalDue: due, daysLeft: left }) + "\n",
      );
    else {
      const expiry =
        now > cert.notAfter
          ? `expired ${utc(cert.notAfter)}`
          : `expires ${utc(cert.notAfter)} (in ${left} day${left === 1 ? "" : "s"})`;
      ctx.io.stdout.write(
        needed
          ? `renewal needed: ${file} ${expiry}\nnext: a2a-node pki renew\n`
          : `no renewal needed: ${file} ${expiry}; renewal is due ${utc(due)}\n`,
      );
    }
    return needed ? NEEDS_RENEWAL_EXIT.needed : NEEDS_RENEWAL_EXIT.notNeeded;
  },
};
