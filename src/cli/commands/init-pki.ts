import { existsSync } from "node:fs";
import { resolve } from "node:path";
import type { Command, CommandContext } from "../command";
import { CliError, ExitCode, UsageError } from "../errors";
import { parseFlags, intFlag } from "../flags";
import { ensureHome, giveToHomeOwner, homePaths } from "../../home";
import { initPki, installBundle, loadNodeIdentity, MAX_DAYS, type InitResult } from "../../../pki";
import { asCliError, expiresIn } from "./pki";

const flags = {
  name: { type: "string", value: "NAME" },
  san: { type: "list", value: "DNS_OR_IP" },
  days: { type: "number", value: "N" },
  "ca-days": { type: "number", value: "N" },
  bundle: { type: "string", value: "FILE" },
  json: { type: "boolean" },
} as const;

const help = `USAGE
  a2a-node init-pki --name NAME [--san DNS_OR_IP]... [--days N] [--ca-days N] [--json]
  a2a-node init-pki --bundle FILE [--json]

  On the first machine, --name creates the fleet CA (certs/ca.crt, secrets/ca.key) and this node's key
  and certificate signed by it. On every other machine, --bundle installs the identity made for it on
  the first machine with 'a2a-node pki issue'. Existing keys are never overwritten.

FLAGS
  --name NAME         this node's name: 1-63 letters, digits and inner dashes; its certificate's CN
  --san DNS_OR_IP     another DNS name or IP address peers dial this node by (repeatable); the name,
                      localhost, 127.0.0.1 and this machine's hostname are always included
  --days N            node certificate validity in days (default 365)
  --ca-days N         fleet CA validity in days, when one is created (default 3650)
  --bundle FILE       install a bundle from 'a2a-node pki issue' instead of making keys here
  --json              print the result as one line of JSON
  --home DIR          node home (default $A2A_NODE_HOME, else ~/.a2a-node)

EXAMPLES
  # first machine: create the fleet CA and this node's identity
  a2a-node init-pki --name alice --san alice.lan --san 10.0.0.5

  # still on alice: make bob's identity, copy it to bob privately
  a2a-node pki issue bob --san 10.0.0.6 --out bob.bundle
  scp bob.bundle bob.lan:

  # on bob: install it, then delete the bundle (it holds bob's private key)
  a2a-node init-pki --bundle bob.bundle && rm bob.bundle

EXIT CODES
  0  identity created or installed
  1  refused or failed: key already exists, bad bundle, no CA key, ... (the message says what next)
  2  usage error
`;

async function run(argv: string[], ctx: CommandContext): Promise<number> {
  const { flags: f, positionals } = parseFlags(argv, flags);
  if (positionals.length > 0) throw new UsageError(`unexpected argument '${positionals[0]}'`);
  if (f.name !== undefined && f.bundle !== undefined) throw new UsageError("--name and --bundle cannot be used together");
  if (f.name === undefined && f.bundle === undefined) throw new UsageError("give --name NAME (new fleet or node) or --bundle FILE");
  if (f.bundle !== undefined) {
    // A bundle's certificate already fixes names and validity; silently ignoring these would mislead.
    for (const [flag, given] of [["san", f.san.length > 0], ["days", f.days !== undefined], ["ca-days", f["ca-days"] !== undefined]] as const)
      if (given) throw new UsageError(`--${flag} cannot be used with --bundle: the bundle's certificate is already made`);
  }
  const days = intFlag("days", f.days, 365, 1, MAX_DAYS);
  const caDays = intFlag("ca-days", f["ca-days"], 3650, 1, MAX_DAYS);

  if (existsSync(homePaths(ctx.home).nodeCert)) throw await alreadyANode(ctx.home);
  const paths = ensureHome(homePaths(ctx.home));
  let result: InitResult;
  try {
    result =
      f.bundle !== undefined
        ? await installBundle(paths, resolve(f.bundle))
        : await initPki(paths, { name: f.name!, sans: f.san, days, caDays });
  } catch (err) {
    throw asCliError(err);
  }
  giveToHomeOwner(paths.root, [paths.certsDir, paths.secretsDir, paths.caCert, paths.caKey, paths.nodeCert, paths.nodeKey]);
  ctx.io.stdout.write(f.json ? JSON.stringify(toJson(result)) + "\n" : summary(result, f.bundle && resolve(f.bundle)));
  return 0;
}

/**
 * A home is one node, and its key is never replaced. Say whose identity is there and when it was made: the
 * usual surprise is `npm start`, which gives a home without one an identity named after the host.
 */
async function alreadyANode(home: string): Promise<CliError> {
  let who = "";
  try {
    const id = await loadNodeIdentity(homePaths(home), { allowExpired: true });
    who = ` of node "${id.name}" (fleet CA "${id.ca.subjectCn}", made ${id.notBefore.toISOString().slice(0, 10)})`;
  } catch {}
  return new CliError(
    `${home} already holds the identity${who}; a home is one node, and its key is never replaced`,
    ExitCode.Failure,
    "use that identity as it is (a2a-node pki show; 'npm start' makes one named after the host in a home without one), or set up another node in another home: a2a-node --home DIR init-pki ...",
  );
}

function toJson(r: InitResult) {
  return {
    ca: { ...r.ca, keyPath: r.ca.keyPath ?? null },
    node: r.node,
  };
}

function summary(r: InitResult, bundlePath: string | undefined): string {
  const fromBundle = bundlePath !== undefined;
  const ca = r.ca.created ? "created fleet CA" : fromBundle ? "installed fleet CA" : "using existing fleet CA";
  const lines = [
    `${ca} "${r.ca.subjectCn}"`,
    `  fingerprint  ${r.ca.fingerprint256}`,
    `  certificate  ${r.ca.certPath}`,
    r.ca.keyPath
      ? `  key          ${r.ca.keyPath} (keep it private: it signs every node's certificate)`
      : `  key          not on this machine (certificates are issued where the CA key is)`,
    `node "${r.node.name}"`,
    `  SANs         ${r.node.sans.join(", ")}`,
    `  fingerprint  ${r.node.fingerprint256}`,
    `  expires      ${expiresIn(r.node.notAfter)}`,
    `  certificate  ${r.node.certPath}`,
    `  key          ${r.node.keyPath}`,
  ];
  if (r.ca.keyPath) lines.push("next: make identities for other machines with 'a2a-node pki issue NAME --out NAME.bundle'");
  if (bundlePath) lines.push(`next: delete ${bundlePath} (it holds this node's private key)`);
  return lines.join("\n") + "\n";
}

export const initPkiCommand: Command = {
  name: "init-pki",
  summary: "create this node's key and certificate (and the fleet CA), or install a bundle",
  help,
  flags,
  run,
};
