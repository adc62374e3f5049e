import type { CommandContext, Subcommand } from "../../command";
import { ExitCode, UsageError } from "../../errors";
import { parseFlags } from "../../flags";
import { serviceLocation } from "./location";

const uninstallFlags = {
  user: { type: "boolean" },
  purge: { type: "boolean" },
  root: { type: "string", value: "DIR" },
  json: { type: "boolean" },
} as const;

async function runUninstall(argv: string[], ctx: CommandContext): Promise<number> {
  const { flags: f, positionals } = parseFlags(argv, uninstallFlags);
  if (positionals.length) throw new UsageError(`unexpected argument '${positionals[0]}'`);
  const { host, location } = await serviceLocation(f.user, f.root, ctx);
  const { uninstall } = await import("../../../service/uninstall");
  const progress = f.json ? ctx.io.stderr : ctx.io.stdout;
  const r = uninstall(location, host, f.purge, (line) => progress.write(`${line}\n`));
  if (f.json) ctx.io.stdout.write(`${JSON.stringify({ scope: location.scope, ...r })}\n`);
  return ExitCode.Ok;
}

export const uninstall: Subcommand = {
  name: "uninstall",
  usage: "service uninstall [--user] [--purge] [--root DIR] [--json]",
  summary: "stops and disables the service and removes its unit; the home stays unless --purge",
  flags: uninstallFlags,
  flagHelp: `  --user              remove the user service
  --purge             also delete the node's home: its keys, certificates and database
  --root DIR          remove from an image at DIR (see install)
  --json              print the result as one line of JSON`,
  examples: "  sudo a2a-node service uninstall",
  run: runUninstall,
};
