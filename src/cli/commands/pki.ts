import type { Command, CommandContext } from "../command";
import { CliError, ExitCode, UsageError } from "../errors";
import { PkiError } from "../../../pki/errors";
import { inspect } from "./pki/inspect";
import { issue } from "./pki/issue";
import { list } from "./pki/list";
import { needsRenewalSub } from "./pki/needs-renewal";
import { show } from "./pki/show";
import { sign } from "./pki/sign";
import { importSub } from "./pki/import";
import { revokeSub } from "./pki/revoke";
import { renew } from "./pki/renew";
import { token } from "./pki/token";
import { protectCaKeySub } from "./pki/protect-ca-key";
import { spiffeDomain } from "./pki/spiffe-domain";
import { exportCrlSub, importCrlSub } from "./pki/crl-files";
import type { PkiSubcommand } from "./pki/subcommand";
import { handPkiFilesToOwner } from "../home-files";
export { expiresIn } from "./pki/text";

/** Every `pki` subcommand, in the order the help lists them. */
const SUBCOMMANDS: readonly PkiSubcommand[] = [token, issue, sign, importSub, list, revokeSub, exportCrlSub, importCrlSub, renew, needsRenewalSub, show, inspect, protectCaKeySub, spiffeDomain];

const names = SUBCOMMANDS.map((s) => s.name);
const column = Math.max(...names.map((n) => n.length)) + 1;

/** A subcommand's summary under SUBCOMMANDS, its continuation lines aligned under the first. */
function summaryLines(sub: PkiSubcommand): string {
  const [first, ...rest] = sub.summary.split("\n").map((l) => l.trim());
  return [`  ${sub.name.padEnd(column)} ${first}`, ...rest.map((l) => `${" ".repeat(column + 3)}${l}`)].join("\n");
}

const help = `USAGE
${SUBCOMMANDS.map((s) => `  a2a-node ${s.usage}`).join("\n")}

SUBCOMMANDS
${SUBCOMMANDS.map(summaryLines).join("\n")}

FLAGS
${SUBCOMMANDS.filter((s) => s.flagHelp)
  .map((s) => `  (${s.name})\n${s.flagHelp}`)
  .join("\n")}
  --json              print the result as JSON (one line)
  --home DIR          node home (default $A2A_NODE_HOME, else ~/.a2a-node)

EXAMPLES
  # on the CA machine (serving with --enroll-port 9444): let dave join; it prints the command for dave
  a2a-node pki token --name dave --ttl 15m

  # on the CA machine: make bob's identity, then copy it to bob privately
  a2a-node pki issue bob --san bob.lan --san 10.0.0.6 --out bob.bundle
  scp bob.bundle bob.lan: && rm bob.bundle

  # no private key travels: carol made hers with 'init-pki --name carol --csr carol.csr'
  a2a-node pki sign carol.csr --out carol.crt          # on the CA machine
  a2a-node pki import carol.crt --ca ca.crt            # back on carol

  # bob's machine was lost: issue a new identity and revoke the old one
  a2a-node pki issue bob --replace --out bob.bundle

  # what has this CA issued? cut off a stolen machine, fleet-wide
  a2a-node pki list
  a2a-node pki revoke bob --reason "laptop stolen"

  # keep the CA key under a passphrase; give every certificate a SPIFFE ID
  A2A_NODE_CA_PASSPHRASE=... a2a-node pki protect-ca-key
  a2a-node pki spiffe-domain fleet.example

  # an air-gapped fleet: carry the revocation list by hand
  a2a-node pki export-crl --out fleet.crl              # on the CA machine
  a2a-node pki import-crl fleet.crl                    # on every other machine

  # check this node's identity, or feed it to a script
  a2a-node pki show
  a2a-node pki show --json | jq -r .fingerprint256
  a2a-node pki inspect certs/node.crt

  # renew this node's certificate from the CA node (serve does it by itself when ca_peer is set)
  a2a-node pki renew --ca-peer alpha

  # in a daily timer, for a node that does not run serve
  a2a-node pki needs-renewal && a2a-node pki renew

EXIT CODES
  0  done; for needs-renewal: renewal needed
  1  refused or failed: no CA key here, FILE exists, name already holds a valid certificate, a
     revocation list older than the installed one, ...
     (the message says what next); for needs-renewal: no renewal needed
  2  usage error (unknown subcommand, missing NAME, CSR, CERT, --out or --ca)
  3  no such certificate file (inspect, needs-renewal)
  255  needs-renewal only: the certificate could not be read
`;

async function run(argv: string[], ctx: CommandContext): Promise<number> {
  const [name, ...rest] = argv;
  if (name === undefined) throw new UsageError(`missing subcommand: ${names.join(", ")}`);
  const sub = SUBCOMMANDS.find((s) => s.name === name);
  if (!sub) throw new UsageError(`unknown subcommand '${name}' (expected ${names.join(", ")})`);
  try {
    return await sub.run(rest, ctx);
  } catch (err) {
    throw asCliError(err);
  } finally {
    handPkiFilesToOwner(ctx.home);
  }
}

/** PKI failures reach a person as a CliError: the one-line message plus the next step as the hint. */
export function asCliError(err: unknown): unknown {
  if (err instanceof PkiError) return new CliError(err.message, ExitCode.Failure, err.hint);
  return err;
}

export const pkiCommand: Command = {
  name: "pki",
  summary: "the fleet's certificates: token, issue, sign, import, list, revoke, renew, show, inspect",
  help,
  flags: {},
  subcommands: Object.fromEntries(SUBCOMMANDS.map((s) => [s.name, s.flagSpec])),
  run,
};
