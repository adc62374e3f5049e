import { resolve } from "node:path";
import { UsageError } from "../../errors";
import { parseFlags, intFlag } from "../../flags";
import { issueBundle, MAX_DAYS } from "../../../../pki";
import { expiresIn, revokedLines } from "./text";
import type { Subcommand } from "../../command";
import { caPaths } from "../../ca-unlock";
import { tellRunningServe } from "../../tell-serve";

const flags = {
  san: { type: "list", value: "DNS_OR_IP" },
  out: { type: "string", value: "FILE" },
  days: { type: "number", value: "N" },
  force: { type: "boolean" },
  replace: { type: "boolean" },
  json: { type: "boolean" },
} as const;

export const issue: Subcommand = {
  name: "issue",
  usage: "pki issue NAME --out FILE [--san DNS_OR_IP]... [--days N] [--replace] [--force] [--json]",
  flags: flags,
  summary: `on the CA machine: make a key and certificate for machine NAME and write them, with the
            fleet CA certificate, to a bundle FILE (mode 0600) for 'a2a-node init-pki --bundle FILE'.
            Refused while NAME holds a valid certificate, unless --replace`,
  flagHelp: `  --out FILE          where to write the bundle (required); never overwritten without --force
  --san DNS_OR_IP     another DNS name or IP address the machine is dialled by (repeatable); NAME,
                      localhost and 127.0.0.1 are always included
  --days N            certificate validity in days (default 365)
  --replace           issue although NAME holds a valid certificate, and revoke that one
  --force             replace an existing FILE`,
  examples: `  # on the CA machine: make bob's identity, then copy it to bob privately
  a2a-node pki issue bob --san bob.lan --san 10.0.0.6 --out bob.bundle
  scp bob.bundle bob.lan: && rm bob.bundle

  # bob's machine was lost: issue a new identity and revoke the old one
  a2a-node pki issue bob --replace --out bob.bundle`,
  async run(argv, ctx) {
    const { flags: f, positionals } = parseFlags(argv, flags);
    if (positionals.length === 0) throw new UsageError("pki issue needs the machine's NAME");
    if (positionals.length > 1) throw new UsageError(`unexpected argument '${positionals[1]}'`);
    if (f.out === undefined) throw new UsageError("pki issue needs --out FILE (where to write the bundle)");
    const days = intFlag("days", f.days, 365, 1, MAX_DAYS);
    const out = resolve(f.out);
    const r = await issueBundle(caPaths(ctx), {
      name: positionals[0],
      sans: f.san,
      days,
      out,
      overwrite: f.force,
      replace: f.replace,
    });
    // --replace revoked the old certificate: the running serve closes its open connections now.
    if (r.revoked.length > 0) tellRunningServe(ctx.home);
    if (f.json) ctx.io.stdout.write(JSON.stringify(r) + "\n");
    else
      ctx.io.stdout.write(
        [
          `issued "${r.name}" into ${r.out} (mode 0600: it holds ${r.name}'s private key)`,
          `  SANs         ${r.sans.join(", ")}`,
          `  serial       ${r.serial}`,
          `  fingerprint  ${r.fingerprint256}`,
          `  expires      ${expiresIn(r.notAfter)}`,
          ...revokedLines(r.revoked),
          `next: copy it to ${r.name} over a private channel, run 'a2a-node init-pki --bundle FILE' there, then delete every copy`,
        ].join("\n") + "\n",
      );
    return 0;
  },
};
