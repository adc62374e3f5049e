import { resolve } from "node:path";
import type { Command, CommandContext } from "../command";
import { CliError, ExitCode, UsageError } from "../errors";
import { parseFlags, intFlag } from "../flags";
import { homePaths } from "../../home";
import { PkiError, issueBundle, loadNodeIdentity, MAX_DAYS, type NodeIdentity } from "../../../pki";

const issueFlags = {
  san: { type: "list", value: "DNS_OR_IP" },
  out: { type: "string", value: "FILE" },
  days: { type: "number", value: "N" },
  force: { type: "boolean" },
  json: { type: "boolean" },
} as const;

const showFlags = {
  json: { type: "boolean" },
} as const;

const help = `USAGE
  a2a-node pki issue NAME --out FILE [--san DNS_OR_IP]... [--days N] [--force] [--json]
  a2a-node pki show [--json]

SUBCOMMANDS
  issue   on the CA machine: make a key and certificate for machine NAME and write them, with the
          fleet CA certificate, to a bundle FILE (mode 0600) for 'a2a-node init-pki --bundle FILE'
  show    print this node's identity: name, SANs, fingerprint, expiry, fleet CA, whether this home
          holds the CA key

FLAGS (issue)
  --out FILE          where to write the bundle (required); never overwritten without --force
  --san DNS_OR_IP     another DNS name or IP address the machine is dialled by (repeatable); NAME,
                      localhost and 127.0.0.1 are always included
  --days N            certificate validity in days (default 365)
  --force             replace an existing FILE
  --json              print the result as one line of JSON

FLAGS (show)
  --json              print the identity as one line of JSON

  --home DIR          node home (default $A2A_NODE_HOME, else ~/.a2a-node)

EXAMPLES
  # on the CA machine: make bob's identity, then copy it to bob privately
  a2a-node pki issue bob --san bob.lan --san 10.0.0.6 --out bob.bundle
  scp bob.bundle bob.lan: && rm bob.bundle

  # check this node's identity, or feed it to a script
  a2a-node pki show
  a2a-node pki show --json | jq -r .fingerprint256

EXIT CODES
  0  done
  1  refused or failed: no CA key here, FILE exists, no identity yet, ... (the message says what next)
  2  usage error (unknown subcommand, missing NAME or --out)
`;

async function run(argv: string[], ctx: CommandContext): Promise<number> {
  const [sub, ...rest] = argv;
  if (sub === undefined) throw new UsageError("missing subcommand: issue or show");
  try {
    if (sub === "issue") return await runIssue(rest, ctx);
    if (sub === "show") return await runShow(rest, ctx);
  } catch (err) {
    throw asCliError(err);
  }
  throw new UsageError(`unknown subcommand '${sub}' (expected issue or show)`);
}

async function runIssue(argv: string[], ctx: CommandContext): Promise<number> {
  const { flags: f, positionals } = parseFlags(argv, issueFlags);
  if (positionals.length === 0) throw new UsageError("pki issue needs the machine's NAME");
  if (positionals.length > 1) throw new UsageError(`unexpected argument '${positionals[1]}'`);
  if (f.out === undefined) throw new UsageError("pki issue needs --out FILE (where to write the bundle)");
  const days = intFlag("days", f.days, 365, 1, MAX_DAYS);
  const out = resolve(f.out);
  const r = await issueBundle(homePaths(ctx.home), { name: positionals[0], sans: f.san, days, out, overwrite: f.force });
  if (f.json) ctx.io.stdout.write(JSON.stringify(r) + "\n");
  else
    ctx.io.stdout.write(
      [
        `issued "${r.name}" into ${r.out} (mode 0600: it holds ${r.name}'s private key)`,
        `  SANs         ${r.sans.join(", ")}`,
        `  fingerprint  ${r.fingerprint256}`,
        `  expires      ${expiresIn(r.notAfter)}`,
        `next: copy it to ${r.name} over a private channel, run 'a2a-node init-pki --bundle FILE' there, then delete every copy`,
      ].join("\n") + "\n",
    );
  return 0;
}

async function runShow(argv: string[], ctx: CommandContext): Promise<number> {
  const { flags: f, positionals } = parseFlags(argv, showFlags);
  if (positionals.length > 0) throw new UsageError(`unexpected argument '${positionals[0]}'`);
  const paths = homePaths(ctx.home);
  const id = await loadNodeIdentity(paths, { allowExpired: true });
  ctx.io.stdout.write(f.json ? JSON.stringify(showJson(id, paths)) + "\n" : showText(id, paths));
  return 0;
}

function showJson(id: NodeIdentity, paths: ReturnType<typeof homePaths>) {
  return {
    name: id.name,
    sans: id.sans,
    fingerprint256: id.fingerprint256,
    serialNumber: id.serialNumber,
    notBefore: id.notBefore,
    notAfter: id.notAfter,
    expired: id.notAfter.getTime() < Date.now(),
    certPath: paths.nodeCert,
    keyPath: paths.nodeKey,
    ca: {
      subjectCn: id.ca.subjectCn,
      fingerprint256: id.ca.fingerprint256,
      notAfter: id.ca.notAfter,
      certPath: paths.caCert,
      hasKey: id.hasCaKey,
    },
  };
}

function showText(id: NodeIdentity, paths: ReturnType<typeof homePaths>): string {
  return (
    [
      `node            ${id.name}`,
      `SANs            ${id.sans.join(", ")}`,
      `fingerprint     ${id.fingerprint256}`,
      `expires         ${expiresIn(id.notAfter)}`,
      `certificate     ${paths.nodeCert}`,
      `key             ${paths.nodeKey}`,
      `fleet CA        ${id.ca.subjectCn}`,
      `CA fingerprint  ${id.ca.fingerprint256}`,
      `CA expires      ${expiresIn(id.ca.notAfter)}`,
      id.hasCaKey
        ? `CA key          ${paths.caKey} (this home can issue: a2a-node pki issue NAME --out FILE)`
        : `CA key          not here (identities are issued on the CA machine)`,
    ].join("\n") + "\n"
  );
}

/** "2027-11-30 04:50 UTC (in 364 days)", or "... (EXPIRED)". */
export function expiresIn(at: Date, now = new Date()): string {
  const when = at.toISOString().slice(0, 16).replace("T", " ") + " UTC";
  // Rounded, so a certificate issued a moment ago for 365 days reads "in 365 days".
  const days = Math.round((at.getTime() - now.getTime()) / 86_400_000);
  return at.getTime() < now.getTime() ? `${when} (EXPIRED)` : `${when} (in ${days} day${days === 1 ? "" : "s"})`;
}

/** PKI failures reach a person as a CliError: the one-line message plus the next step as the hint. */
export function asCliError(err: unknown): unknown {
  if (err instanceof PkiError) return new CliError(err.message, ExitCode.Failure, err.hint);
  return err;
}

export const pkiCommand: Command = {
  name: "pki",
  summary: "issue identities for other machines (pki issue), show this node's (pki show)",
  help,
  flags: {},
  subcommands: { issue: issueFlags, show: showFlags },
  run,
};
