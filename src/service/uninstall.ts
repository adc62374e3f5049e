/**
 * `a2a-node service uninstall`: stop and disable the service and remove its unit. The home (identity,
 * database) stays unless --purge: a reinstall then finds the same node. The service user and the binary
 * stay too (the binary is also the command line; users are not removed, as packages do not remove theirs).
 */
import { existsSync, rmSync } from "node:fs";
import { ServiceError } from "./errors";
import type { Host } from "./host";
import { systemctl, type ServiceLocation } from "./systemd";
import { UNIT_NAME } from "./unit";

export interface UninstallResult {
  unitPath: string;
  removedUnit: boolean;
  purgedHome?: string;
}

export function uninstall(
  loc: ServiceLocation,
  host: Host,
  purge: boolean,
  say: (line: string) => void,
): UninstallResult {
  if (loc.scope === "system" && !host.isRoot)
    throw new ServiceError(
      "removing the system service needs root",
      "failure",
      "run it with sudo, or add --user for a service of your own user",
    );
  const hasUnit = existsSync(loc.unitPathOnDisk);
  if (!hasUnit && !(purge && existsSync(loc.homeOnDisk)))
    throw new ServiceError(
      `no a2a-node ${loc.scope} service is installed (no ${loc.unitPath})`,
      "not-found",
      loc.scope === "system"
        ? "was it installed with --user? then: a2a-node service uninstall --user"
        : "was it installed as a system service? then: sudo a2a-node service uninstall",
    );
  if (!host.which("systemctl"))
    throw new ServiceError(
      "systemctl was not found on PATH: this machine does not seem to run systemd",
      "failure",
      `remove ${loc.unitPath} yourself`,
    );
  if (hasUnit) {
    if (host.root !== "/") systemctl(host, loc, ["--root", host.root, "disable", UNIT_NAME]);
    else {
      systemctl(host, loc, ["disable", "--now", UNIT_NAME]);
      say(`stopped and disabled ${UNIT_NAME}`);
    }
    rmSync(loc.unitPathOnDisk, { force: true });
    say(`removed ${loc.unitPath}`);
    if (host.root === "/") {
      systemctl(host, loc, ["daemon-reload"]);
      // A unit that failed before is remembered until reset; forget it with the file.
      systemctl(host, loc, ["reset-failed", UNIT_NAME], { allowFailure: true });
    }
  }
  let purgedHome: string | undefined;
  if (purge && existsSync(loc.homeOnDisk)) {
    rmSync(loc.homeOnDisk, { recursive: true, force: true });
    purgedHome = loc.home;
    say(`deleted ${loc.home} (this node's keys, certificates and database)`);
  } else if (existsSync(loc.homeOnDisk)) say(`kept ${loc.home} (identity and tasks; --purge deletes it)`);
  return { unitPath: loc.unitPath, removedUnit: hasUnit, purgedHome };
}
