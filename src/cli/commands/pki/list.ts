import { UsageError } from "../../errors";
import { parseFlags } from "../../flags";
import { homePaths } from "../../../home";
import { openCaRegistry } from "../../../../pki";
import { statusOf, utc } from "./text";
import type { Subcommand } from "../../command";

const flags = {
  json: { type: "boolean" },
} as const;

export const list: Subcommand = {
  name: "list",
  usage: "pki list [--json]",
  flags: flags,
  summary: `on the CA machine: every certificate this fleet CA issued, oldest first: name, status (valid,
            expired, revoked), expiry, serial and fingerprint`,
  flagHelp: "",
  examples: `  # what has this CA issued?
  a2a-node pki list`,
  async run(argv, ctx) {
    const { flags: f, positionals } = parseFlags(argv, flags);
    if (positionals.length > 0) throw new UsageError(`unexpected argument '${positionals[0]}'`);
    const registry = openCaRegistry(homePaths(ctx.home));
    let issued;
    try {
      issued = registry.list();
    } finally {
      registry.close();
    }
    const now = new Date();
    if (f.json) {
      const rows = issued.map((c) => ({
        ...c,
        status: statusOf(c, now),
        revokedAt: c.revokedAt ?? null,
        revokeReason: c.revokeReason ?? null,
      }));
      ctx.io.stdout.write(JSON.stringify(rows) + "\n");
      return 0;
    }
    if (issued.length === 0) {
      ctx.io.stdout.write("this CA has issued no certificates yet (a2a-node pki issue NAME --out FILE)\n");
      return 0;
    }
    const rows = issued.map((c) => [c.name, statusOf(c, now), utc(c.notAfter), c.serial, c.fingerprint256]);
    const head = ["NAME", "STATUS", "EXPIRES", "SERIAL", "FINGERPRINT (SHA-256)"];
    const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
    const line = (r: string[]) => r.map((v, i) => (i === r.length - 1 ? v : v.padEnd(widths[i]))).join("  ");
    ctx.io.stdout.write([line(head), ...rows.map(line)].join("\n") + "\n");
    return 0;
  },
};
