import type { CommandContext, Subcommand } from "../../command";
import { CliError, ExitCode, UsageError } from "../../errors";
import { parseFlags } from "../../flags";
import { serviceLocation } from "./location";

const statusFlags = {
  user: { type: "boolean" },
  json: { type: "boolean" },
} as const;

async function runStatus(argv: string[], ctx: CommandContext): Promise<number> {
  const { flags: f, positionals } = parseFlags(argv, statusFlags);
  if (positionals.length) throw new UsageError(`unexpected argument '${positionals[0]}'`);
  const { host, location } = await serviceLocation(f.user, undefined, ctx);
  const { serviceStatus } = await import("../../../service/status");
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
  if (s.health)
    lines.push(
      `  health    ${s.health.ready ? "ready" : s.health.answered ? "NOT READY" : "NO ANSWER"}: ${s.health.detail}${s.health.url ? ` (${s.health.url})` : ""}`,
    );
  ctx.io.stdout.write(`${lines.join("\n")}\n`);
  if (s.ok) return ExitCode.Ok;
  const sudo = s.scope === "system" ? "sudo " : "";
  const us = s.scope === "user" ? " --user" : "";
  const hint =
    u.ActiveState !== "active"
      ? `see why: journalctl${us} -u a2a-node -n 50 --no-pager; start it: ${sudo}systemctl${us} start a2a-node`
      : `check the model endpoint and the rest with: ${sudo}a2a-node doctor`;
  throw new CliError(
    u.ActiveState !== "active" ? `the service is ${u.ActiveState ?? "unknown"}` : "the node is running but not ready",
    ExitCode.Failure,
    hint,
  );
}

export const status: Subcommand = {
  name: "status",
  usage: "service status [--user] [--json]",
  summary: "the unit's state from systemd, and the node's own readiness asked over mutual TLS",
  flags: statusFlags,
  flagHelp: `  --user              the user service
  --json              print the unit's state and the node's health as one line of JSON`,
  examples: "  a2a-node service status",
  run: runStatus,
};
