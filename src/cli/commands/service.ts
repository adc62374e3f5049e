import type { Command } from "../command";
import { commandGroup } from "../command-group";
import { CliError, ExitCode, UsageError } from "../errors";
import { ServiceError } from "../../service/errors";
import { install } from "./service/install";
import { status } from "./service/status";
import { uninstall } from "./service/uninstall";

export const serviceCommand: Command = commandGroup({
  name: "service",
  summary: "run this node under systemd: service install, uninstall, status",
  intro: "",
  subcommands: [install, uninstall, status],
  // The service library says what kind of refusal it met; the exit code for each kind is the CLI's to give.
  mapError: (err) => (err instanceof ServiceError ? asCliError(err) : err),
  notes: `  Settings: HOME/config.toml (see scripts/config.example.toml), or for the system service A2A_NODE_*
  variables in /etc/default/a2a-node; apply them with 'systemctl reload a2a-node' (or restart, as the
  log says). Logs: journalctl -u a2a-node -f.`,
  exitCodes: `  0  done (status: active and ready)
  1  failed: not root, no systemd, the service did not start, not ready, ... (the message says what next)
  2  usage error
  3  no such service installed (uninstall, status)`,
});

function asCliError(err: ServiceError): CliError {
  if (err.kind === "usage") return new UsageError(err.message);
  return new CliError(err.message, err.kind === "not-found" ? ExitCode.NotFound : ExitCode.Failure, err.hint);
}
