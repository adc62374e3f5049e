import { basename, resolve } from "node:path";
import type { Command, CommandContext } from "../command";
import { CliError, ExitCode, UsageError } from "../errors";
import { intFlag, parseFlags } from "../flags";
import { ServiceError } from "../../service/errors";

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

const uninstallFlags = {
  user: { type: "boolean" },
  purge: { type: "boolean" },
  root: { type: "string", value: "DIR" },
  json: { type: "boolean" },
} as const;

const statusFlags = {
  user: { type: "boolean" },
  json: { type: "boolean" },
} as const;

const help = `USAGE
  sudo a2a-node service install (--name NAME [--san DNS_OR_IP]... [--days N] | --bundle FILE) [--no-start]
  a2a-node service install --user (--name NAME ... | --bundle FILE) [--no-start]
  a2a-node service uninstall [--user] [--purge]
  a2a-node service status [--user] [--json]

SUBCOMMANDS
  install     a system service (root): creates the system user a2a-node, the state directory
              /var/lib/a2a-node (0700, the user's) as the node's home, the identity (a new fleet with
              --name, or joins one with a bundle from 'a2a-node pki issue'; the key is handed to the
              service user, 0600), copies this binary to /usr/local/bin/a2a-node, writes a hardened unit
              to /etc/systemd/system/a2a-node.service, enables it and starts it. Run again to update the
              unit or the binary: the identity already there is kept.
              --user: a service of your own user instead (~/.config/systemd/user, home ~/.a2a-node or
              --home), with lingering on so it runs without a login session.
  uninstall   stops and disables the service and removes its unit; the home stays unless --purge
  status      the unit's state from systemd, and the node's own readiness asked over mutual TLS

FLAGS (install)
  --user              install a user service instead of a system one (no root needed)
  --name NAME         no identity yet: create a fleet CA and this node's identity (as 'init-pki --name')
  --san DNS_OR_IP     with --name: another name or address peers dial this node by (repeatable)
  --days N            with --name: certificate validity in days (default 365)
  --bundle FILE       no identity yet: install the one in FILE (as 'init-pki --bundle'); delete FILE after
  --no-start          enable the service but do not start it now
  --root DIR          install into DIR as if it were / (an image being built, or a test): files go under
                      DIR, the user is added with 'useradd --root DIR', the unit enabled with 'systemctl
                      --root DIR'; nothing is started (no systemd runs DIR)
  --print             print the unit that would be written, and change nothing
  --json              print the result as one line of JSON (progress goes to stderr)

FLAGS (uninstall)
  --user              remove the user service
  --purge             also delete the node's home: its keys, certificates and database
  --root DIR          remove from an image at DIR (see install)
  --json              print the result as one line of JSON

FLAGS (status)
  --user              the user service
  --json              print the unit's state and the node's health as one line of JSON

  Settings: HOME/config.toml (see scripts/config.example.toml), or for the system service A2A_NODE_*
  variables in /etc/default/a2a-node; apply them with 'systemctl reload a2a-node' (or restart, as the
  log says). Logs: journalctl -u a2a-node -f.

EXAMPLES
  # a new fleet on this machine, served at boot
  sudo a2a-node service install --name alpha --san 10.0.0.5

  # join the fleet with the bundle made for this machine on the CA machine
  sudo a2a-node service install --bundle beta.bundle && rm beta.bundle

  # no root: a service of your own user
  a2a-node service install --user --name laptop

  a2a-node service status
  sudo a2a-node service uninstall

EXIT CODES
  0  done (status: active and ready)
  1  failed: not root, no systemd, the service did not start, not ready, ... (the message says what next)
  2  usage error
  3  no such service installed (uninstall, status)
`;

async function run(argv: string[], ctx: CommandContext): Promise<number> {
  try {
    return await runSubcommand(argv, ctx);
  } catch (err) {
    throw err instanceof ServiceError ? asCliError(err) : err;
  }
}

/** The service library says what kind of refusal it met; the exit code for each kind is the CLI's to give. */
function asCliError(err: ServiceError): CliError {
  if (err.kind === "usage") return new UsageError(err.message);
  return new CliError(err.message, err.kind === "not-found" ? ExitCode.NotFound : ExitCode.Failure, err.hint);
}

async function runSubcommand(argv: string[], ctx: CommandContext): Promise<number> {
  const [sub, ...rest] = argv;
  if (sub === "install") return runInstall(rest, ctx);
  if (sub === "uninstall") return runUninstall(rest, ctx);
  if (sub === "status") return runStatus(rest, ctx);
  if (sub === undefined) throw new UsageError("service needs a subcommand: install, uninstall or status");
  throw new UsageError(`unknown service subcommand '${sub}' (install, uninstall, status)`);
}

async function context(user: boolean, root: string | undefined, ctx: CommandContext) {
  if (user && root !== undefined) throw new UsageError("--root is for system services; a user service is written under your own home");
  const [{ realHost }, { locate }] = await Promise.all([import("../../service/host"), import("../../service/systemd")]);
  const host = realHost(ctx.io.env, root === undefined ? "/" : resolve(root));
  return { host, location: locate(user ? "user" : "system", host, ctx.io.env, ctx.home) };
}

async function runInstall(argv: string[], ctx: CommandContext): Promise<number> {
  const { flags: f, positionals } = parseFlags(argv, installFlags);
  if (positionals.length) throw new UsageError(`unexpected argument '${positionals[0]}'`);
  if (f.name !== undefined && f.bundle !== undefined) throw new UsageError("--name and --bundle cannot be used together");
  if (f.bundle !== undefined && (f.san.length || f.days !== undefined)) throw new UsageError("--san and --days go with --name: a bundle's certificate is already made");
  const days = f.days === undefined ? undefined : intFlag("days", f.days, 365, 1, 36500);
  const { host, location } = await context(f.user, f.root, ctx);
  if (f.print) {
    const { renderUnit, SYSTEM_BINARY } = await import("../../service/unit");
    ctx.io.stdout.write(renderUnit({ scope: location.scope, home: location.home, binary: location.scope === "system" ? SYSTEM_BINARY : process.execPath }));
    return ExitCode.Ok;
  }
  // The unit runs a binary; under `bun src/main.ts` there is none to point it at.
  if (/^bun(\.exe)?$/.test(basename(process.execPath)))
    throw new CliError("service install must be run from the compiled binary", ExitCode.Failure, "npm run build, then: sudo dist/a2a-node service install ...");
  const { install } = await import("../../service/install");
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
    r.started ? `a2a-node is running as node "${r.node.name}"` : `a2a-node is installed as node "${r.node.name}"${host.root === "/" ? `; start it with: ${sudo}systemctl${u} start a2a-node` : ""}`,
    `  status    a2a-node service status${u}`,
    `  logs      journalctl${u} -u a2a-node -f`,
    `  settings  ${r.home}/config.toml${location.scope === "system" ? " or /etc/default/a2a-node" : ""}, then ${sudo}systemctl${u} reload a2a-node`,
  ];
  if (r.node.how === "created")
    lines.push(`next: identities for other machines: ${sudo}a2a-node pki issue NAME --out NAME.bundle${location.scope === "system" ? " (as root, it uses the service's home)" : ""}`);
  ctx.io.stdout.write(`${lines.join("\n")}\n`);
  return ExitCode.Ok;
}

async function runUninstall(argv: string[], ctx: CommandContext): Promise<number> {
  const { flags: f, positionals } = parseFlags(argv, uninstallFlags);
  if (positionals.length) throw new UsageError(`unexpected argument '${positionals[0]}'`);
  const { host, location } = await context(f.user, f.root, ctx);
  const { uninstall } = await import("../../service/uninstall");
  const progress = f.json ? ctx.io.stderr : ctx.io.stdout;
  const r = uninstall(location, host, f.purge, (line) => progress.write(`${line}\n`));
  if (f.json) ctx.io.stdout.write(`${JSON.stringify({ scope: location.scope, ...r })}\n`);
  return ExitCode.Ok;
}

async function runStatus(argv: string[], ctx: CommandContext): Promise<number> {
  const { flags: f, positionals } = parseFlags(argv, statusFlags);
  if (positionals.length) throw new UsageError(`unexpected argument '${positionals[0]}'`);
  const { host, location } = await context(f.user, undefined, ctx);
  const { serviceStatus } = await import("../../service/status");
  const s = await serviceStatus(location, host, ctx.io.env);
  if (f.json) {
    ctx.io.stdout.write(`${JSON.stringify(s)}\n`);
    return s.ok ? ExitCode.Ok : ExitCode.Failure;
  }
  const u = s.unit;
  const pid = u.MainPID && u.MainPID !== "0" ? `, PID ${u.MainPID}` : "";
  const since = u.ActiveState === "active" && u.ActiveEnterTimestamp ? ` since ${u.ActiveEnterTimestamp}` : "";
  const restarts = u.NRestarts && u.NRestarts !== "0" ? `, restarted ${u.NRestarts} times` : "";
  const lines = [
    `${s.unitPath} (${s.scope})`,
    `  unit      ${u.ActiveState ?? "?"} (${u.SubState ?? "?"})${since}${pid}${restarts}; ${u.UnitFileState ?? "?"} at boot${u.Result && u.Result !== "success" ? `; last result: ${u.Result}` : ""}`,
    `  home      ${s.home}`,
  ];
  if (s.health) lines.push(`  health    ${s.health.ready ? "ready" : s.health.answered ? "NOT READY" : "NO ANSWER"}: ${s.health.detail}${s.health.url ? ` (${s.health.url})` : ""}`);
  ctx.io.stdout.write(`${lines.join("\n")}\n`);
  if (s.ok) return ExitCode.Ok;
  const sudo = s.scope === "system" ? "sudo " : "";
  const us = s.scope === "user" ? " --user" : "";
  const hint =
    u.ActiveState !== "active"
      ? `see why: journalctl${us} -u a2a-node -n 50 --no-pager; start it: ${sudo}systemctl${us} start a2a-node`
      : `check the model endpoint and the rest with: ${sudo}a2a-node doctor`;
  throw new CliError(u.ActiveState !== "active" ? `the service is ${u.ActiveState ?? "unknown"}` : "the node is running but not ready", ExitCode.Failure, hint);
}

export const serviceCommand: Command = {
  name: "service",
  summary: "run this node under systemd: service install, uninstall, status",
  help,
  flags: {},
  subcommands: { install: installFlags, uninstall: uninstallFlags, status: statusFlags },
  run,
};
