import { existsSync } from "node:fs";
import { join } from "node:path";
import { loadConfigFile, resolveSettings } from "../../../config";
import { homePaths } from "../../../home";
import { runningNodeState } from "../../../runtime-state";
import { createToken, inspectCert, MAX_DAYS, NO_CA_KEY_FOR_ISSUE, pkiErrors, readPublic } from "../../../../pki";
import { CliError, ExitCode, UsageError } from "../../errors";
import { enrollmentUrl, otherAddresses, type EnrollUrl } from "./enroll-url";
import { intFlag, parseFlags } from "../../flags";
import { utc } from "./text";
import type { Subcommand } from "../../command";

const flags = {
  name: { type: "string", value: "NAME" },
  ttl: { type: "string", value: "DURATION" },
  san: { type: "list", value: "DNS_OR_IP" },
  days: { type: "number", value: "N" },
  replace: { type: "boolean" },
  url: { type: "string", value: "URL" },
  json: { type: "boolean" },
} as const;

const UNITS: Record<string, number> = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** "90s", "15m", "1h", "2d" */
export function parseTtl(text: string): number {
  const m = /^(\d+)([smhd])$/.exec(text.trim());
  if (!m) throw new UsageError(`--ttl must be a number and a unit, such as 15m, 1h or 2d (got '${text}')`);
  return Number(m[1]) * UNITS[m[2]];
}

export const token: Subcommand = {
  name: "token",
  usage: "pki token --name NAME [--ttl 1h] [--san DNS_OR_IP]... [--days N] [--replace] [--url URL] [--json]",
  flags: flags,
  summary: `on the CA machine: a one-time join token for machine NAME (kept only hashed; expires after
            --ttl) and the 'a2a-node join' command to run there, with the enrollment URL this node
            serves (its running serve's enrollment port, else enroll_port). The CA node must serve
            with --enroll-port. SANs and validity are fixed here, not by the machine that joins`,
  flagHelp: `  --name NAME         the joining machine's name (required)
  --ttl DURATION      how long the token can be used: 30s, 15m, 1h (default), 2d; at most 7d
  --san DNS_OR_IP     a DNS name or IP its certificate will carry (repeatable); NAME, localhost and
                      127.0.0.1 always
  --days N            its certificate's validity in days (default 365)
  --replace           NAME holds a valid certificate: the join replaces and revokes it
  --url URL           the enrollment URL to print, as the joining machine reaches this one (default: the
                      running node's enrollment port, on the address it listens on, advertise_url's host,
                      a --san of this node's certificate, or the host name)`,
  examples: `  # on the CA machine (serving with --enroll-port 9444): let dave join; it prints the command for dave
  a2a-node pki token --name dave --ttl 15m`,
  async run(argv, ctx) {
    const { flags: f, positionals } = parseFlags(argv, flags);
    if (positionals.length > 0) throw new UsageError(`unexpected argument '${positionals[0]}'`);
    if (f.name === undefined) throw new UsageError("pki token needs --name NAME (the machine that will join)");
    const ttlMs = parseTtl(f.ttl ?? "1h");
    const days = intFlag("days", f.days, 365, 1, MAX_DAYS);
    const paths = homePaths(ctx.home);
    // Only the CA's home makes tokens; said before anything else about it.
    if (!existsSync(paths.caKey)) throw pkiErrors.noCaKey(paths.caKey, NO_CA_KEY_FOR_ISSUE);
    // Where the joining machine goes is settled before a token exists: no token for a command that cannot work.
    const where =
      f.url !== undefined ? givenUrl(f.url) : enrollmentUrl(enrollFacts(ctx.home, ctx.io.env, paths.nodeCert));
    if (!where)
      throw new CliError(
        "this node serves no enrollment port, so a joining machine has nowhere to go",
        ExitCode.Failure,
        "serve with one ('a2a-node serve --enroll-port 9444', or enroll_port = 9444 in config.toml), then run this again; or pass --url https://HOST:PORT if it is served elsewhere",
      );
    const t = createToken(paths, { name: f.name, ttlMs, sans: f.san, days, replace: f.replace });
    const fingerprint = `sha256:${inspectCert(readPublic(paths.caCert)).fingerprint256.replace(/:/g, "").toLowerCase()}`;
    const command = `a2a-node join ${where.url} --token ${t.token} --ca-fingerprint ${fingerprint}`;
    if (f.json) {
      ctx.io.stdout.write(
        JSON.stringify({
          name: t.name,
          token: t.token,
          expiresAt: t.expiresAt,
          caFingerprint: fingerprint,
          enrollUrl: where.url,
          command,
        }) + "\n",
      );
      return 0;
    }
    ctx.io.stdout.write(
      [
        `join token for "${t.name}", usable once until ${utc(t.expiresAt)}:`,
        `  ${t.token}`,
        `on ${t.name}, run:`,
        `  ${command}`,
        ...urlNotes(where, t.name),
        "the token is a secret until used: pass it over a private channel",
      ].join("\n") + "\n",
    );
    return 0;
  },
};

function givenUrl(text: string): EnrollUrl {
  let u: URL;
  try {
    u = new URL(text);
  } catch {
    throw new UsageError(`--url must be an https URL such as https://alpha.lan:9444 (got '${text}')`);
  }
  if (u.protocol !== "https:" || !u.port || u.pathname !== "/" || u.search || u.hash)
    throw new UsageError(
      `--url must be https://HOST:PORT, the enrollment port as the joining machine reaches it (got '${text}')`,
    );
  return { url: u.origin, hostFrom: "--url", loopbackOnly: false };
}

/** The running node's enrollment listener, or the settings a node started later would use. */
function enrollFacts(home: string, env: Record<string, string | undefined>, certPath: string) {
  const config = resolveSettings({}, env, loadConfigFile(join(home, "config.toml"), false)).config;
  const cert = inspectCert(readPublic(certPath));
  return {
    running: runningNodeState(home),
    config: { host: config.host, enrollPort: config.enrollPort, advertiseUrl: config.advertiseUrl },
    sans: cert.sans,
    name: cert.subjectCn,
  };
}

/** What the person should know about the URL: where its host came from, and when no other machine can reach it. */
function urlNotes(where: EnrollUrl, name: string): string[] {
  if (where.hostFrom === "--url") return [];
  const others = otherAddresses();
  const notes = [
    `(the host is ${where.hostFrom}; if ${name} reaches this machine by another name or address${others.length ? ` (this machine has ${others.join(", ")})` : ""}, use that in the URL: the CA fingerprint check holds whichever)`,
  ];
  if (where.loopbackOnly)
    notes.push(
      `warning: the enrollment port listens on loopback only, which no other machine reaches: serve with --host 0.0.0.0 (or one of this machine's addresses) for ${name} to join from elsewhere`,
    );
  return notes;
}
