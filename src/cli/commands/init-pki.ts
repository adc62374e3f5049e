import { existsSync } from "node:fs";
import { resolve } from "node:path";
import type { Command, CommandContext } from "../command";
import { CliError, ExitCode, UsageError } from "../errors";
import { parseFlags, intFlag } from "../flags";
import { ensureHome, homePaths } from "../../home";
import { handPkiFilesToOwner } from "../home-files";
import {
  initPki,
  installBundle,
  loadNodeIdentity,
  MAX_DAYS,
  requestCertificate,
  type InitResult,
  type RequestResult,
} from "../../../pki";
import { asCliError, expiresIn } from "./pki";
import { caUnlock, newPassphrase } from "../ca-unlock";

const flags = {
  name: { type: "string", value: "NAME" },
  san: { type: "list", value: "DNS_OR_IP" },
  days: { type: "number", value: "N" },
  "ca-days": { type: "number", value: "N" },
  bundle: { type: "string", value: "FILE" },
  csr: { type: "string", value: "FILE" },
  force: { type: "boolean" },
  "encrypt-ca-key": { type: "boolean" },
  "spiffe-domain": { type: "string", value: "DOMAIN" },
  json: { type: "boolean" },
} as const;

const help = `USAGE
  a2a-node init-pki --name NAME [--san DNS_OR_IP]... [--days N] [--ca-days N] [--encrypt-ca-key]
                    [--spiffe-domain DOMAIN] [--json]
  a2a-node init-pki --bundle FILE [--json]
  a2a-node init-pki --name NAME --csr FILE [--san DNS_OR_IP]... [--force] [--json]

  On the first machine, --name creates the fleet CA (certs/ca.crt, secrets/ca.key) and this node's key
  and certificate signed by it. On every other machine, --bundle installs the identity made for it on
  the first machine with 'a2a-node pki issue'. Or, so that no private key ever travels, --csr makes this
  node's key here and writes a certificate request FILE for the CA machine to sign ('a2a-node pki sign');
  the certificate that comes back is installed with 'a2a-node pki import'. Existing keys are never
  overwritten (run --csr again before the certificate came back, and it reuses the key).

FLAGS
  --name NAME         this node's name: 1-63 letters, digits and inner dashes; its certificate's CN
  --san DNS_OR_IP     another DNS name or IP address peers dial this node by (repeatable); the name,
                      localhost, 127.0.0.1 and this machine's hostname are always included
  --days N            node certificate validity in days (default 365)
  --ca-days N         fleet CA validity in days, when one is created (default 3650)
  --spiffe-domain DOMAIN  the fleet's SPIFFE trust domain: every certificate the CA issues also carries
                      the URI SAN spiffe://DOMAIN/NAME, for service meshes (pki spiffe-domain changes it)
  --encrypt-ca-key    encrypt the new CA key with a passphrase (from A2A_NODE_CA_PASSPHRASE, or typed
                      twice); every command that signs then needs it (never a flag)
  --bundle FILE       install a bundle from 'a2a-node pki issue' instead of making keys here
  --csr FILE          make this node's key and write a certificate request to FILE, for the CA machine
  --force             with --csr: replace an existing FILE
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

  # or, with no private key travelling: on carol, then on the CA machine, then on carol again
  a2a-node init-pki --name carol --san 10.0.0.8 --csr carol.csr
  a2a-node pki sign carol.csr --out carol.crt
  a2a-node pki import carol.crt --ca ca.crt

EXIT CODES
  0  identity created or installed
  1  refused or failed: key already exists, bad bundle, no CA key, ... (the message says what next)
  2  usage error
`;

async function run(argv: string[], ctx: CommandContext): Promise<number> {
  const { flags: f, positionals } = parseFlags(argv, flags);
  if (positionals.length > 0) throw new UsageError(`unexpected argument '${positionals[0]}'`);
  if (f.name !== undefined && f.bundle !== undefined)
    throw new UsageError("--name and --bundle cannot be used together");
  if (f.name === undefined && f.bundle === undefined)
    throw new UsageError("give --name NAME (new fleet or node) or --bundle FILE");
  if (f.csr !== undefined) return runCsr(f, ctx);
  if (f.force) throw new UsageError("--force applies only to --csr FILE");
  if (f["encrypt-ca-key"] && f.bundle !== undefined)
    throw new UsageError("--encrypt-ca-key applies only when --name creates the fleet CA");
  if (f["spiffe-domain"] !== undefined && f.bundle !== undefined)
    throw new UsageError(
      "--spiffe-domain applies only to the CA machine (--name); the bundle's certificate is already made",
    );
  if (f.bundle !== undefined) {
    // A bundle's certificate already fixes names and validity; silently ignoring these would mislead.
    for (const [flag, given] of [
      ["san", f.san.length > 0],
      ["days", f.days !== undefined],
      ["ca-days", f["ca-days"] !== undefined],
    ] as const)
      if (given)
        throw new UsageError(`--${flag} cannot be used with --bundle: the bundle's certificate is already made`);
  }
  const days = intFlag("days", f.days, 365, 1, MAX_DAYS);
  const caDays = intFlag("ca-days", f["ca-days"], 3650, 1, MAX_DAYS);

  if (existsSync(homePaths(ctx.home).nodeCert)) throw await alreadyANode(ctx.home);
  const paths = { ...ensureHome(homePaths(ctx.home)), unlock: caUnlock(ctx) };
  if (f["encrypt-ca-key"] && existsSync(paths.caKey))
    throw new CliError(
      `this home already has a fleet CA key (${paths.caKey})`,
      ExitCode.Usage,
      "encrypt it with 'a2a-node pki protect-ca-key'",
    );
  const caPassphrase = f["encrypt-ca-key"] ? await newPassphrase(ctx) : undefined;
  let result: InitResult;
  try {
    result =
      f.bundle !== undefined
        ? await installBundle(paths, resolve(f.bundle))
        : await initPki(paths, {
            name: f.name!,
            sans: f.san,
            days,
            caDays,
            caPassphrase,
            spiffeDomain: f["spiffe-domain"],
          });
  } catch (err) {
    throw asCliError(err);
  }
  handPkiFilesToOwner(ctx.home);
  ctx.io.stdout.write(f.json ? JSON.stringify(toJson(result)) + "\n" : summary(result, f.bundle && resolve(f.bundle)));
  return 0;
}

/** init-pki --name NAME --csr FILE: the key stays here, the request goes to the CA machine. */
async function runCsr(
  f: {
    name?: string;
    bundle?: string;
    csr?: string;
    san: string[];
    days?: number;
    "ca-days"?: number;
    "spiffe-domain"?: string;
    force: boolean;
    json: boolean;
  },
  ctx: CommandContext,
): Promise<number> {
  if (f.bundle !== undefined) throw new UsageError("--csr and --bundle cannot be used together");
  // The CA machine decides the validity when it signs.
  for (const flag of ["days", "ca-days", "spiffe-domain"] as const)
    if (f[flag] !== undefined) throw new UsageError(`--${flag} cannot be used with --csr: the CA machine chooses it`);
  const paths = ensureHome(homePaths(ctx.home));
  let r: RequestResult;
  try {
    r = await requestCertificate(paths, { name: f.name!, sans: f.san, csrOut: resolve(f.csr!), overwrite: f.force });
  } catch (err) {
    throw asCliError(err);
  }
  handPkiFilesToOwner(ctx.home);
  if (f.json) ctx.io.stdout.write(JSON.stringify(r) + "\n");
  else
    ctx.io.stdout.write(
      [
        r.keyCreated
          ? `made this node's key ${r.keyPath} (it never leaves this machine)`
          : `reused this node's pending key ${r.keyPath}`,
        `wrote a certificate request for "${r.name}" to ${r.csrPath}`,
        `  SANs asked for  ${r.sans.join(", ")}`,
        `next: copy ${r.csrPath} to the CA machine and run 'a2a-node pki sign ${r.csrPath} --out ${r.name}.crt' there;`,
        `      bring back ${r.name}.crt and its certs/ca.crt, then here: a2a-node pki import ${r.name}.crt --ca ca.crt`,
      ].join("\n") + "\n",
    );
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
  if (r.ca.keyPath)
    lines.push("next: make identities for other machines with 'a2a-node pki issue NAME --out NAME.bundle'");
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
