import type { Command } from "../command";
import { commandGroup } from "../command-group";
import { install } from "./service/install";
import { status } from "./service/status";
import { uninstall } from "./service/uninstall";

export const serviceCommand: Command = commandGroup({
  name: "service",
  summary: "run this node under systemd: service install, uninstall, status",
  intro: "",
  subcommands: [install, uninstall, status],
  notes: `  Settings: HOME/config.toml (see scripts/config.example.toml), or for the system service A2A_NODE_*
  variables in /etc/default/a2a-node; apply them with 'systemctl reload a2a-node' (or restart, as the
  log says). Logs: journalctl -u a2a-node -f.`,
  exitCodes: `  0  done (status: active and ready)
  1  failed: not root, no systemd, the service did not start, not ready, ... (the message says what next)
  2  usage error
  3  no such service installed (uninstall, status)`,
});
