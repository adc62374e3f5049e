import { SETTINGS, type ServeConfig, type SettingName } from "../config";

/**
 * What a reload (SIGHUP) does with the settings read again: each changed setting marked reloadable takes its
 * new value in `config` itself (which the node reads at each use), every other change waits for a restart.
 * Both lists name settings as the config file spells them.
 */
export function applyReloadable(config: ServeConfig, next: ServeConfig): { applied: string[]; needsRestart: string[] } {
  const applied: string[] = [];
  const needsRestart: string[] = [];
  for (const name of Object.keys(SETTINGS) as SettingName[]) {
    if (JSON.stringify(config[name]) === JSON.stringify(next[name])) continue;
    if ((SETTINGS[name] as { reloadable?: boolean }).reloadable) {
      (config as Record<string, unknown>)[name] = next[name];
      applied.push(SETTINGS[name].file);
    } else needsRestart.push(SETTINGS[name].file);
  }
  return { applied, needsRestart };
}
