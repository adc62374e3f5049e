/**
 * `a2a-node service status`: what systemd says of the unit, and what the node itself says (its readiness,
 * asked over mutual TLS on its port). Either can be wrong while the other looks fine: a unit "active" whose
 * model server is down, a node that answers though the unit is disabled.
 */
import { existsSync } from "node:fs";
import { ServiceError } from "./errors";
import { SYSTEM_HOME } from "../home";
import type { Host } from "./host";
import { homeSettings, nodeHealth, readEnvironmentFile, type NodeHealth } from "./node-health";
import { systemctl, type ServiceLocation } from "./systemd";
import { SYSTEM_ENV_FILE, UNIT_NAME } from "./unit";

const PROPERTIES = [
  "LoadState",
  "ActiveState",
  "SubState",
  "UnitFileState",
  "MainPID",
  "ActiveEnterTimestamp",
  "NRestarts",
  "Result",
] as const;
export type UnitState = Partial<Record<(typeof PROPERTIES)[number], string>>;

export interface ServiceStatus {
  scope: ServiceLocation["scope"];
  unitPath: string;
  home: string;
  unit: UnitState;
  health?: NodeHealth;
  /** Active and ready. */
  ok: boolean;
}

export async function serviceStatus(
  loc: ServiceLocation,
  host: Host,
  env: Record<string, string | undefined>,
): Promise<ServiceStatus> {
  if (!existsSync(loc.unitPathOnDisk))
    throw new ServiceError(
      `no a2a-node ${loc.scope} service is installed (no ${loc.unitPath})`,
      "not-found",
      loc.scope === "system"
        ? "install it: sudo a2a-node service install --name NAME (or --user for your own user)"
        : "install it: a2a-node service install --user --name NAME",
    );
  if (!host.which("systemctl"))
    throw new ServiceError("systemctl was not found on PATH: this machine does not seem to run systemd");
  const r = systemctl(host, loc, ["show", UNIT_NAME, `--property=${PROPERTIES.join(",")}`]);
  const unit: UnitState = {};
  for (const line of r.stdout.split("\n")) {
    const eq = line.indexOf("=");
    if (eq > 0 && (PROPERTIES as readonly string[]).includes(line.slice(0, eq)))
      unit[line.slice(0, eq) as keyof UnitState] = line.slice(eq + 1);
  }
  let health: NodeHealth | undefined;
  if (unit.ActiveState === "active" || unit.ActiveState === "reloading") {
    // The service's settings: its config file and, for the system unit, its environment file.
    const serviceEnv = loc.scope === "system" ? readEnvironmentFile(SYSTEM_ENV_FILE) : {};
    try {
      health = await nodeHealth(loc.home, homeSettings(loc.home, { ...serviceEnv, A2A_NODE_HOME: loc.home }));
    } catch (err) {
      health = { url: "", ready: false, answered: false, detail: `cannot ask: ${(err as Error).message}` };
    }
    if (loc.home === SYSTEM_HOME && !host.isRoot && !health.answered && /permission|EACCES/i.test(health.detail))
      health.detail += " (run with sudo to read the service's home)";
  }
  return {
    scope: loc.scope,
    unitPath: loc.unitPath,
    home: loc.home,
    unit,
    health,
    ok: unit.ActiveState === "active" && health?.ready === true,
  };
}
