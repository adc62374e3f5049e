/**
 * The node's configuration: the settings declared in settings/serve-settings.ts, filled in one order,
 * defaults < config file < environment < flags. Every error names where the bad value came from (the flag,
 * the environment variable, or the config file and its key), so a person knows what to fix.
 */
import { existsSync, readFileSync } from "node:fs";
import type { LogLevel } from "./log";
import { SettingProblem, type Setting } from "./settings/kinds";
import {
  EXECUTOR_KINDS,
  SETTINGS,
  type ExecutorKind,
  type SettingName,
  type SettingValues,
} from "./settings/serve-settings";
import { cardSkills, skillModels, type SkillModel } from "./settings/skills";
import { DEFAULT_SKILLS } from "./server/agent-card";

export { EXECUTOR_KINDS, SETTINGS };
export type { ExecutorKind, SettingName, SkillModel };

/** Everything `serve` needs. */
export type ServeConfig = Omit<SettingValues, "executor" | "logLevel"> & {
  executor: ExecutorKind;
  logLevel: LogLevel;
  /** Per-skill model settings (from [[skills]] model / system_prompt / temperature), by skill id. */
  skillModels?: Record<string, SkillModel>;
};

/** A configuration that cannot be used; the message names the flag, variable or file key at fault. */
export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "ConfigError";
  }
}

const NAMES = Object.keys(SETTINGS) as SettingName[];
const setting = (name: SettingName) => SETTINGS[name] as Setting<unknown>;

export const DEFAULTS: ServeConfig = Object.fromEntries(NAMES.map((n) => [n, setting(n).default])) as ServeConfig;

/** Where each setting's value came from: "default", "file", "flag", or the environment variable's name. */
export type Sources = Record<SettingName, string>;

/** What a config file set, by setting name, already checked. */
export type FileValues = Partial<Record<SettingName, unknown>>;

/** Values given as flags, by flag name, as typed (a repeatable flag gives a list). */
export type FlagValues = Record<string, string | string[] | boolean | number | undefined>;

const BY_FILE_KEY = new Map(NAMES.map((n) => [setting(n).file, n]));

/**
 * Reads a TOML config file. Unknown keys are an error (a typo must not be silently ignored); a missing file
 * is an error only when it was named explicitly.
 */
export function loadConfigFile(path: string, explicit: boolean): FileValues {
  if (!existsSync(path)) {
    if (explicit) throw new ConfigError(`config file ${path} does not exist`);
    return {};
  }
  let raw: Record<string, unknown>;
  try {
    raw = Bun.TOML.parse(readFileSync(path, "utf8")) as Record<string, unknown>;
  } catch (err) {
    throw new ConfigError(`config file ${path} is not valid TOML: ${(err as Error).message}`);
  }
  const out: FileValues = {};
  for (const [key, value] of Object.entries(raw)) {
    const name = BY_FILE_KEY.get(key);
    if (!name)
      throw new ConfigError(`config file ${path}: unknown key '${key}' (known: ${[...BY_FILE_KEY.keys()].join(", ")})`);
    out[name] = checked(() => setting(name).fromFile(value), `config file ${path}: ${key}`);
  }
  return out;
}

/** The effective configuration and where each value came from. */
export function resolveSettings(
  flags: FlagValues,
  env: Record<string, string | undefined>,
  file: FileValues = {},
): { config: ServeConfig; sources: Sources } {
  const config: Record<string, unknown> = {};
  const sources = {} as Sources;
  for (const name of NAMES) {
    const s = setting(name);
    let value = s.default;
    let from = "default";
    if (name in file) {
      value = file[name];
      from = "file";
    }
    const envName = s.env.find((e) => env[e] !== undefined && env[e] !== "");
    if (envName) {
      value = checked(() => s.fromText(env[envName] as string, "env"), envName);
      from = envName;
    }
    const flag = s.flag === false ? undefined : flags[s.flag];
    const given = Array.isArray(flag) ? (flag.length ? flag : undefined) : flag;
    if (given !== undefined && s.flag !== false) {
      const at = `--${s.flag}`;
      value = Array.isArray(given)
        ? given.flatMap((g) => checked(() => s.fromText(g, "flag"), at) as unknown[])
        : checked(() => s.fromText(String(given), "flag"), at);
      from = "flag";
    }
    config[name] = value;
    sources[name] = from;
  }
  const c = config as ServeConfig;
  if (c.skills) {
    // A rule for a skill this node does not declare would never let anything through: a typo, said now.
    const ids = new Set(c.skills.map((s) => s.id));
    c.authorize.forEach((rule, i) => {
      const unknown = rule.skills?.find((s) => s !== "*" && !ids.has(s));
      if (unknown !== undefined)
        throw new ConfigError(
          `authorize entry ${i + 1}: skill '${unknown}' is not one of this node's [[skills]] (${[...ids].join(", ")})`,
        );
    });
    c.skillModels = skillModels(c.skills);
    c.skills = cardSkills(c.skills);
  }
  if (c.extendedCard) {
    // One skill id names one skill, whichever card lists it (a message picks its skill by id).
    const publicIds = new Set((c.skills ?? DEFAULT_SKILLS).map((s) => s.id));
    const clash = c.extendedCard.skills.find((s) => publicIds.has(s.id));
    if (clash)
      throw new ConfigError(
        `config file: extended_card: skill id '${clash.id}' is already a skill of the public card; give the fleet-only skill another id`,
      );
    const models = skillModels(c.extendedCard.skills);
    if (Object.keys(models).length) c.skillModels = { ...c.skillModels, ...models };
    c.extendedCard = { ...c.extendedCard, skills: cardSkills(c.extendedCard.skills) };
  }
  return { config: c, sources };
}

function checked<T>(read: () => T, source: string): T {
  try {
    return read();
  } catch (err) {
    if (err instanceof SettingProblem) throw new ConfigError(`${source} ${err.message}`);
    throw err;
  }
}

/** The effective configuration for `serve --check --json`, with secrets shown only as set or not. */
export function redacted(c: ServeConfig): Record<string, unknown> {
  const out: Record<string, unknown> = { ...c };
  for (const name of NAMES) {
    const s = setting(name);
    if (s.secret) out[name] = c[name] === undefined ? "(not set)" : "(set)";
    else if (s.redact && c[name] !== undefined) out[name] = s.redact(c[name]);
  }
  return out;
}
