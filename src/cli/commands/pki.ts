import type { Command, Subcommand } from "../command";
import { commandGroup } from "../command-group";
import { CliError, ExitCode } from "../errors";
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
import { handPkiFilesToOwner } from "../home-files";
export { expiresIn } from "./pki/text";

/** Every `pki` subcommand, in the order the help lists them. */
const SUBCOMMANDS: readonly Subcommand[] = [
  token,
  issue,
  sign,
  importSub,
  list,
  revokeSub,
  exportCrlSub,
  importCrlSub,
  renew,
  needsRenewalSub,
  show,
  inspect,
  protectCaKeySub,
  spiffeDomain,
];

export const pkiCommand: Command = commandGroup({
  name: "pki",
  summary: "the fleet's certificates: token, issue, sign, import, list, revoke, renew, show, inspect",
  intro: "",
  subcommands: SUBCOMMANDS,
  commonFlagHelp: `  --json              print the result as JSON (one line)
  --home DIR          node home (default $A2A_NODE_HOME, else ~/.a2a-node)`,
  exitCodes: `  0  done; for needs-renewal: renewal needed
  1  refused or failed: no CA key here, FILE exists, name already holds a valid certificate, a
     revocation list older than the installed one, ...
     (the message says what next); for needs-renewal: no renewal needed
  2  usage error (unknown subcommand, missing NAME, CSR, CERT, --out or --ca)
  3  no such certificate file (inspect, needs-renewal), or no certificate of that NAME or SERIAL (revoke)
  255  needs-renewal only: the certificate could not be read
`,
  mapError: asCliError,
  finally: (ctx) => handPkiFilesToOwner(ctx.home),
});

/**
 * PKI failures reach a person as a CliError: the one-line message plus the next step as the hint. A
 * certificate the CA never issued (`pki revoke nosuch`) is "not found", as the exit codes say.
 */
export function asCliError(err: unknown): unknown {
  if (err instanceof PkiError)
    return new CliError(err.message, err.code === "NOT_ISSUED" ? ExitCode.NotFound : ExitCode.Failure, err.hint);
  return err;
}
