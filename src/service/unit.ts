/**
 * The systemd unit `a2a-node service install` writes. One renderer for both kinds: a system unit, run as its
 * own user with systemd's StateDirectory as the node's home and the full sandbox; and a user unit, run by
 * the user's own service manager, which can apply only the sandboxing that needs no privileges (seccomp
 * filters: the mount-namespace options need root or PrivateUsers, and would hide the user's home anyway).
 * scripts/systemd/a2a-node.service is the system unit as rendered here (a test keeps them identical).
 */
import { SYSTEM_HOME } from "../home";

export const UNIT_NAME = "a2a-node.service";
export const SERVICE_USER = "a2a-node";
/** Where a system install puts the binary: ProtectHome hides /home and /root from the service. */
export const SYSTEM_BINARY = "/usr/local/bin/a2a-node";
/** Settings for the system service as environment variables (optional; HOME/config.toml is the other place). */
export const SYSTEM_ENV_FILE = "/etc/default/a2a-node";

export type UnitScope = "system" | "user";

export interface UnitOptions {
  scope: UnitScope;
  /** Absolute path of the binary ExecStart runs. */
  binary: string;
  /** The node's home (A2A_NODE_HOME): the state directory for a system unit. */
  home: string;
}

/** The system unit as installed by default (what scripts/systemd/a2a-node.service holds). */
export const DEFAULT_SYSTEM_UNIT: UnitOptions = { scope: "system", binary: SYSTEM_BINARY, home: SYSTEM_HOME };

export function renderUnit(o: UnitOptions): string {
  const system = o.scope === "system";
  const lines = [
    `# ${UNIT_NAME}: written by 'a2a-node service install${system ? "" : " --user"}'; 'a2a-node service uninstall${system ? "" : " --user"}' removes it.`,
    system
      ? `# Settings: ${o.home}/config.toml, or A2A_NODE_* variables in ${SYSTEM_ENV_FILE}; then 'systemctl reload a2a-node'.`
      : `# Settings: ${o.home}/config.toml; then 'systemctl --user reload a2a-node'.`,
    "[Unit]",
    "Description=a2a-node: A2A agent delegation over mutual TLS",
    "Documentation=https://github.com/a2a-node/a2a-node",
    ...(system ? ["After=network-online.target", "Wants=network-online.target"] : ["After=network.target"]),
    // Five failed starts in a minute (a bad certificate, a port taken) stop the retries: the log says why.
    "StartLimitIntervalSec=60",
    "StartLimitBurst=5",
    "",
    "[Service]",
    // Bun cannot write to the notify socket itself (no unix datagram sockets); once listening, `serve` runs
    // systemd-notify --ready, which any process of the unit may send with NotifyAccess=all. So `systemctl
    // start` returns when the port is open, and fails when serve does.
    "Type=notify",
    "NotifyAccess=all",
    ...(system ? [`User=${SERVICE_USER}`, `Group=${SERVICE_USER}`] : []),
    `Environment=${quoted(`A2A_NODE_HOME=${o.home}`)}`,
    ...(system ? [`EnvironmentFile=-${SYSTEM_ENV_FILE}`] : []),
    `ExecStart=${quoted(o.binary).replaceAll("$", "$$$$")} serve`,
    // Not /bin/kill (procps), which a minimal system lacks (203/EXEC): the binary itself sends SIGHUP, and
    // waits for the node's outcome, so `systemctl reload` returns once it is applied and fails on a bad config.
    "# SIGHUP to the node, which reads the config file and the certificate again; fails if it refuses the config.",
    `ExecReload=${quoted(o.binary).replaceAll("$", "$$$$")} reload --pid $MAINPID`,
    "# SIGTERM: stop taking tasks, give running ones shutdown_grace_seconds, record the rest; then exit 0.",
    "KillSignal=SIGTERM",
    "TimeoutStopSec=60",
    "Restart=on-failure",
    "RestartSec=2",
    "# Exit 2 is a configuration error: restarting cannot fix it.",
    "RestartPreventExitStatus=2",
    ...(system ? ["StateDirectory=a2a-node", "StateDirectoryMode=0700"] : []),
    "UMask=0077",
    "",
    "NoNewPrivileges=yes",
    ...(system
      ? [
          "ProtectSystem=strict",
          "ProtectHome=yes",
          "PrivateTmp=yes",
          "PrivateDevices=yes",
          "ProtectKernelTunables=yes",
          "ProtectKernelModules=yes",
          "ProtectKernelLogs=yes",
          "ProtectControlGroups=yes",
          "ProtectClock=yes",
          "ProtectHostname=yes",
          "RestrictNamespaces=yes",
          "RestrictSUIDSGID=yes",
          "CapabilityBoundingSet=",
        ]
      : []),
    "RestrictAddressFamilies=AF_INET AF_INET6 AF_UNIX",
    "RestrictRealtime=yes",
    "LockPersonality=yes",
    "SystemCallFilter=@system-service",
    "SystemCallArchitectures=native",
    "# Not MemoryDenyWriteExecute: the JavaScript JIT needs writable and executable memory, and crashes under it.",
    "",
    "[Install]",
    `WantedBy=${system ? "multi-user.target" : "default.target"}`,
  ];
  return `${lines.join("\n")}\n`;
}

/** One word of a unit line: % is a specifier and must be doubled; a path with spaces or quotes is quoted. */
function quoted(word: string): string {
  const w = word.replaceAll("%", "%%");
  return /[\s"'\\]/.test(w) ? `"${w.replaceAll("\\", "\\\\").replaceAll('"', '\\"')}"` : w;
}
