import { basename } from "node:path";
import type { CommandContext, Subcommand } from "../../command";
import { CliError, ExitCode, UsageError } from "../../errors";
import { intFlag, parseFlags } from "../../flags";
import { serviceLocation } from "./location";

const installFlags = {
  user: { type: "boolean" },
  name: { type: "string", value: "NAME" },
  san: { type: "list", value: "DNS_OR_IP" },
  days: { type: "number", value: "N" },
  bundle: { type: "string", value: "FILE" },
  "no-start": { type: "boolean" },
  root: { type: "string", value: "DIR" },
  print: { type: "boolean" },
  json: { type: "boolean" },
} as const;

async function runInstall(argv: string[], ctx: CommandContext): Promise<number> {
  const { flags: f, positionals } = parseFlags(argv, installFlags);
  if (positionals.length) throw new UsageError(`unexpected argument '${positionals[0]}'`);
  if (f.name !== undefined && f.bundle !== undefined)
    throw new UsageError("--name and --bundle cannot be used together");
  if (f.bundle !== undefined && (f.san.length || f.days !== undefined))
    throw new UsageError("--san and --days go with --name: a bundle's certificate is already made");
  const days = f.days === undefined ? undefined : intFlag("days", f.days, 365, 1, 36500);
  const { host, location } = await serviceLocation(f.user, f.root, ctx);
  if (f.print) {
    const { renderUnit, SYSTEM_BINARY } = await import("../../../service/unit");
    ctx.io.stdout.write(
      renderUnit({
        scope: location.scope,
        home: location.home,
        binary: location.scope === "system" ? SYSTEM_BINARY : process.execPath,
      }),
    );
    return ExitCode.Ok;
  }
  // The unit runs a binary; under `bun src/main.ts` there is none to point it at.
  if (/^bun(\.exe)?$/.test(basename(process.execPath)))
    throw new CliError(
      "service install must be run from the compiled binary",
      ExitCode.Failure,
      "npm run build, then: sudo dist/a2a-node service install ...",
    );
  const { install } = await import("../../../service/install");
  const progress = f.json ? ctx.io.stderr : ctx.io.stdout;
  const r = await install({
    location,
    host,
    self: process.execPath,
    identity: { name: f.name, sans: f.san, days, bundle: f.bundle },
    start: !f["no-start"],
    say: (line) => progress.write(`${line}\n`),
  });
  if (f.json) {
    ctx.io.stdout.write(`${JSON.stringify({ scope: location.scope, root: host.root, ...r })}\n`);
    return ExitCode.Ok;
  }
  const u = location.scope === "user" ? " --user" : "";
  const sudo = location.scope === "system" ? "sudo " : "";
  const lines = [
    r.started
      ? `a2a-node is running as node "${r.node.name}"`
      : `a2a-node is installed as node "${r.node.name}"${host.root === "/" ? `; start it with: ${sudo}systemctl${u} start a2a-node` : ""}`,
    `  status    a2a-node service status${u}`,
    `  logs      journalctl${u} -u a2a-node -f`,
    `  settings  ${r.home}/config.toml${location.scope === "system" ? " or /etc/default/a2a-node" : ""}, then ${sudo}systemctl${u} reload a2a-node`,
  ];
  if (r.node.how === "created")
    lines.push(
      `next: identities for other machines: ${sudo}a2a-node pki issue NAME --out NAME.bundle${location.scope === "system" ? " (as root, it uses the service's home)" : ""}`,
    );
  ctx.io.stdout.write(`${lines.join("\n")}\n`);
  return ExitCode.Ok;
}

export const install: Subcommand = {
  name: "install",
  usage: `sudo a2a-node service install (--name NAME [--san DNS_OR_IP]... [--days N] | --bundle FILE) [--no-start]
          service install --user (--name NAME ... | --bundle FILE) [--no-start]`,
  summary: `a system service (root): creates the system user a2a-node, the state directory
            /var/lib/a2a-node (0700, the user's) as the node's home, the identity (a new fleet with
            --name, or joins one with a bundle from 'a2a-node pki issue'; the key is handed to the
            service user, 0600), copies this binary to /usr/local/bin/a2a-node, writes a hardened unit
            to /etc/systemd/system/a2a-node.service, enables it and starts it. Run again to update the
            unit or the binary: the identity already there is kept.
            --user: a service of your own user instead (~/.config/systemd/user, home ~/.a2a-node or
            --home), with lingering on so it runs without a login session.`,
  flags: installFlags,
  flagHelp: `  --user              install a user service instead of a system one (no root needed)
  --name NAME         no identity yet: create a fleet CA and this node's identity (as 'init-pki --name')
  --san DNS_OR_IP     with --name: another name or address peers dial this node by (repeatable)
  --days N            with --name: certificate validity in days (default 365)
  --bundle FILE       no identity yet: install the one in FILE (as 'init-pki --bundle'); delete FILE after
  --no-start          enable the service but do not start it now
  --root DIR          install into DIR as if it were / (an image being built, or a test): files go under
                      DIR, the user is added with 'useradd --root DIR', the unit enabled with 'systemctl
                      --root DIR'; nothing is started (no systemd runs DIR)
  --print             print the unit that would be written, and change nothing
  --json              print the result as one line of JSON (progress goes to stderr)`,
  examples: `  # a new fleet on this machine, served at boot
  sudo a2a-node service install --name alpha --san 10.0.0.5

  # join the fleet with the bundle made for this machine on the CA machine
  sudo a2a-node service install --bundle beta.bundle && rm beta.bundle

  # no root: a service of your own user
  a2a-node service install --user --name laptop`,
  run: runInstall,
};
