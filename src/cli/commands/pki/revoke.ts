import { UsageError } from "../../errors";
import { parseFlags } from "../../flags";
import { homePaths } from "../../../home";
import { revoke } from "../../../../pki";
import { utc } from "./text";
import type { Subcommand } from "../../command";
import { caPaths } from "../../ca-unlock";
import { tellRunningServe, toldLine } from "../../tell-serve";

const flags = {
  reason: { type: "string", value: "TEXT" },
  json: { type: "boolean" },
} as const;

export const revokeSub: Subcommand = {
  name: "revoke",
  usage: "pki revoke NAME|SERIAL [--reason TEXT] [--json]",
  flags: flags,
  summary: `on the CA machine: revoke every certificate of NAME (or the one with SERIAL, and those renewed
            from it), and sign a new revocation list into certs/crl.pem. This node enforces it at once:
            its running serve refuses the next connection with a revoked certificate and closes the open
            ones (it is told with SIGHUP); nodes whose ca_peer is this one fetch it within
            crl_refresh_seconds (or on SIGHUP); others take it with import-crl`,
  flagHelp: `  --reason TEXT       why, kept in the CA's registry (pki list --json)`,
  examples: `  # cut off a stolen machine, fleet-wide
  a2a-node pki revoke bob --reason "laptop stolen"`,
  async run(argv, ctx) {
    const { flags: f, positionals } = parseFlags(argv, flags);
    if (positionals.length === 0) throw new UsageError("pki revoke needs a NAME or SERIAL");
    if (positionals.length > 1) throw new UsageError(`unexpected argument '${positionals[1]}'`);
    const r = await revoke(caPaths(ctx), { target: positionals[0], reason: f.reason });
    const told = tellRunningServe(ctx.home);
    if (f.json) {
      ctx.io.stdout.write(
        JSON.stringify({
          revoked: r.revoked,
          alreadyRevoked: r.already,
          crl: { number: r.crl.number, revoked: r.crl.revoked.size, nextUpdate: r.crl.nextUpdate ?? null },
          reloadedPid: told.told ? told.pid : null,
        }) + "\n",
      );
      return 0;
    }
    const lines = [
      ...r.revoked.map((c) => `revoked "${c.name}" serial ${c.serial} (was valid until ${utc(c.notAfter)})`),
      ...r.already.map((c) => `already revoked: "${c.name}" serial ${c.serial} (on ${utc(c.revokedAt as Date)})`),
      `signed revocation list number ${r.crl.number} (${r.crl.revoked.size} revoked certificate${r.crl.revoked.size === 1 ? "" : "s"}) into ${homePaths(ctx.home).crl}`,
      toldLine(told, "it closes the revoked certificates' open connections"),
      `next: nodes with ca_peer set to this node fetch it within crl_refresh_seconds (SIGHUP: at once);`,
      `      for others: a2a-node pki export-crl --out fleet.crl, then on each: a2a-node pki import-crl fleet.crl`,
    ];
    ctx.io.stdout.write(lines.join("\n") + "\n");
    return 0;
  },
};
