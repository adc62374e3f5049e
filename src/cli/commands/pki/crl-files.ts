import { resolve } from "node:path";
import { UsageError } from "../../errors";
import { parseFlags } from "../../flags";
import { homePaths } from "../../../home";
import { exportCrl, importCrl } from "../../../../pki";
import { utc } from "./text";
import type { Subcommand } from "../../command";
import { caPaths } from "../../ca-unlock";
import { tellRunningServe, toldLine } from "../../tell-serve";

const exportFlags = {
  out: { type: "string", value: "FILE" },
  force: { type: "boolean" },
  json: { type: "boolean" },
} as const;

export const exportCrlSub: Subcommand = {
  name: "export-crl",
  usage: "pki export-crl --out FILE [--force] [--json]",
  flags: exportFlags,
  summary: `write the fleet's revocation list to FILE, for machines the CA node cannot reach (on the CA
            machine it is signed anew, so it is current; elsewhere it is the list this home holds)`,
  flagHelp: `  --out FILE          where to write it (required); never overwritten without --force
  --force             replace an existing FILE`,
  examples: `  # an air-gapped fleet: carry the revocation list by hand
  a2a-node pki export-crl --out fleet.crl              # on the CA machine`,
  async run(argv, ctx) {
    const { flags: f, positionals } = parseFlags(argv, exportFlags);
    if (positionals.length > 0) throw new UsageError(`unexpected argument '${positionals[0]}'`);
    if (f.out === undefined) throw new UsageError("pki export-crl needs --out FILE");
    const out = resolve(f.out);
    const list = await exportCrl(caPaths(ctx), { out, overwrite: f.force });
    if (f.json)
      ctx.io.stdout.write(
        JSON.stringify({ out, number: list.number, revoked: [...list.revoked.keys()], signed: list.thisUpdate }) + "\n",
      );
    else
      ctx.io.stdout.write(
        `wrote revocation list number ${list.number} (${list.revoked.size} revoked, signed ${utc(list.thisUpdate)}) to ${out}\nnext: on each machine, a2a-node pki import-crl ${out}\n`,
      );
    return 0;
  },
};

const importFlags = {
  json: { type: "boolean" },
} as const;

export const importCrlSub: Subcommand = {
  name: "import-crl",
  usage: "pki import-crl FILE [--json]",
  flags: importFlags,
  summary: `install a revocation list from the CA machine, once checked: signed by this home's fleet CA,
            and not older than the one installed. A running serve enforces it at once (new connections
            are judged against the file; it is told with SIGHUP, and closes the revoked certificates'
            open connections)`,
  flagHelp: "",
  examples: `  # on every other machine, with the list the CA machine exported
  a2a-node pki import-crl fleet.crl`,
  async run(argv, ctx) {
    const { flags: f, positionals } = parseFlags(argv, importFlags);
    if (positionals.length === 0) throw new UsageError("pki import-crl needs the FILE to install");
    if (positionals.length > 1) throw new UsageError(`unexpected argument '${positionals[1]}'`);
    const { list, changed } = importCrl(homePaths(ctx.home), resolve(positionals[0]));
    const told = changed ? tellRunningServe(ctx.home) : { told: false };
    if (f.json)
      ctx.io.stdout.write(
        JSON.stringify({
          changed,
          number: list.number,
          revoked: [...list.revoked.keys()],
          reloadedPid: told.told ? told.pid : null,
        }) + "\n",
      );
    else
      ctx.io.stdout.write(
        changed
          ? `installed revocation list number ${list.number} (${list.revoked.size} revoked) into ${homePaths(ctx.home).crl}\n${toldLine(told, "it closes the revoked certificates' open connections")}\n`
          : `revocation list number ${list.number} is already installed; nothing changed\n`,
      );
    return 0;
  },
};
