import { hostname } from "node:os";
import { join } from "node:path";
import { loadConfigFile, resolveSettings } from "../../../config";
import { homePaths } from "../../../home";
import { createToken, inspectCert, MAX_DAYS, readPublic } from "../../../../pki";
import { UsageError } from "../../errors";
import { intFlag, parseFlags } from "../../flags";
import { utc } from "./text";
import type { PkiSubcommand } from "./subcommand";

const flags = {
  name: { type: "string", value: "NAME" },
  ttl: { type: "string", value: "DURATION" },
  san: { type: "list", value: "DNS_OR_IP" },
  days: { type: "number", value: "N" },
  replace: { type: "boolean" },
  json: { type: "boolean" },
} as const;

const UNITS: Record<string, number> = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** "90s", "15m", "1h", "2d" */
export function parseTtl(text: string): number {
  const m = /^(\d+)([smhd])$/.exec(text.trim());
  if (!m) throw new UsageError(`--ttl must be a number and a unit, such as 15m, 1h or 2d (got '${text}')`);
  return Number(m[1]) * UNITS[m[2]];
}

export const token: PkiSubcommand = {
  name: "token",
  usage: "pki token --name NAME [--ttl 1h] [--san DNS_OR_IP]... [--days N] [--replace] [--json]",
  flagSpec: flags,
  summary: `on the CA machine: a one-time join token for machine NAME (kept only hashed; expires after
            --ttl) and the 'a2a-node join' command to run there. The CA node must serve with
            --enroll-port. SANs and validity are fixed here, not by the machine that joins`,
  flagHelp: `  --name NAME         the joining machine's name (required)
  --ttl DURATION      how long the token can be used: 30s, 15m, 1h (default), 2d; at most 7d
  --san DNS_OR_IP     a DNS name or IP its certificate will carry (repeatable); NAME, localhost and
                      127.0.0.1 always
  --days N            its certificate's validity in days (default 365)
  --replace           NAME holds a valid certificate: the join replaces and revokes it`,
  async run(argv, ctx) {
    const { flags: f, positionals } = parseFlags(argv, flags);
    if (positionals.length > 0) throw new UsageError(`unexpected argument '${positionals[0]}'`);
    if (f.name === undefined) throw new UsageError("pki token needs --name NAME (the machine that will join)");
    const ttlMs = parseTtl(f.ttl ?? "1h");
    const days = intFlag("days", f.days, 365, 1, MAX_DAYS);
    const paths = homePaths(ctx.home);
    const t = createToken(paths, { name: f.name, ttlMs, sans: f.san, days, replace: f.replace });
    const fingerprint = `sha256:${inspectCert(readPublic(paths.caCert)).fingerprint256.replace(/:/g, "").toLowerCase()}`;
    const enrollPort = resolveSettings({}, ctx.io.env, loadConfigFile(join(ctx.home, "config.toml"), false)).config.enrollPort;
    const url = `https://${hostname()}:${enrollPort ?? "ENROLL_PORT"}`;
    const command = `a2a-node join ${url} --token ${t.token} --ca-fingerprint ${fingerprint}`;
    if (f.json) {
      ctx.io.stdout.write(JSON.stringify({ name: t.name, token: t.token, expiresAt: t.expiresAt, caFingerprint: fingerprint, command }) + "\n");
      return 0;
    }
    ctx.io.stdout.write(
      [
        `join token for "${t.name}", usable once until ${utc(t.expiresAt)}:`,
        `  ${t.token}`,
        `on ${t.name}, run:`,
        `  ${command}`,
        enrollPort === undefined
          ? "this node must serve with --enroll-port PORT (or enroll_port in its config) for that; put the port in the URL"
          : `(if ${t.name} reaches this machine by another name or address, use that in the URL)`,
        "the token is a secret until used: pass it over a private channel",
      ].join("\n") + "\n",
    );
    return 0;
  },
};
