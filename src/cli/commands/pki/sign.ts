import { resolve } from "node:path";
import { UsageError } from "../../errors";
import { parseFlags, intFlag } from "../../flags";
import { MAX_DAYS, signCsr } from "../../../../pki";
import { expiresIn, revokedLines } from "./text";
import type { Subcommand } from "../../command";
import { caPaths } from "../../ca-unlock";
import { tellRunningServe } from "../../tell-serve";

const flags = {
  out: { type: "string", value: "CERT" },
  san: { type: "list", value: "DNS_OR_IP" },
  days: { type: "number", value: "N" },
  replace: { type: "boolean" },
  force: { type: "boolean" },
  json: { type: "boolean" },
} as const;

export const sign: Subcommand = {
  name: "sign",
  usage: "pki sign CSR --out CERT [--san DNS_OR_IP]... [--days N] [--replace] [--force] [--json]",
  flags: flags,
  summary: `on the CA machine: sign a request from 'init-pki --csr' (the name is its CN; the SANs
            those it asks for, plus --san) and write the certificate to CERT. The private key
            never left the other machine. Refused while the name holds a valid certificate, unless
            --replace`,
  flagHelp: `  --out CERT          where to write the certificate (required); never overwritten without --force
  --san DNS_OR_IP     a DNS name or IP to add to those the request asks for (repeatable)
  --days N            certificate validity in days (default 365)
  --replace           sign although the name holds a valid certificate, and revoke that one
  --force             replace an existing CERT`,
  examples: `  # no private key travels: carol made hers with 'init-pki --name carol --csr carol.csr'
  a2a-node pki sign carol.csr --out carol.crt          # on the CA machine`,
  async run(argv, ctx) {
    const { flags: f, positionals } = parseFlags(argv, flags);
    if (positionals.length === 0) throw new UsageError("pki sign needs the request file (CSR)");
    if (positionals.length > 1) throw new UsageError(`unexpected argument '${positionals[1]}'`);
    if (f.out === undefined) throw new UsageError("pki sign needs --out CERT (where to write the certificate)");
    const days = intFlag("days", f.days, 365, 1, MAX_DAYS);
    const r = await signCsr(caPaths(ctx), {
      csrPath: resolve(positionals[0]),
      out: resolve(f.out),
      sans: f.san,
      days,
      replace: f.replace,
      overwrite: f.force,
    });
    // --replace revoked the old certificate: the running serve closes its open connections now.
    if (r.revoked.length > 0) tellRunningServe(ctx.home);
    if (f.json) ctx.io.stdout.write(JSON.stringify(r) + "\n");
    else
      ctx.io.stdout.write(
        [
          `signed "${r.name}" into ${r.out}`,
          `  SANs         ${r.sans.join(", ")}`,
          `  serial       ${r.serial}`,
          `  fingerprint  ${r.fingerprint256}`,
          `  expires      ${expiresIn(r.notAfter)}`,
          ...revokedLines(r.revoked),
          `next: copy ${r.out} and certs/ca.crt to ${r.name}, and there run 'a2a-node pki import CERT --ca ca.crt'`,
        ].join("\n") + "\n",
      );
    return 0;
  },
};
