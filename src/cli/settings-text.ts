/**
 * The settings table as people read it: the FLAGS sections of `serve --help`, the flag specs the parser
 * takes, and `serve --check`'s listing. All derived from settings/serve-settings.ts.
 */
import { existsSync } from "node:fs";
import { redacted, SETTINGS, type ServeConfig, type SettingName, type Sources } from "../config";
import type { Setting } from "../settings/kinds";
import { GROUPS } from "../settings/serve-settings";
import type { FlagSpec } from "./flags";

const NAMES = Object.keys(SETTINGS) as SettingName[];
const setting = (name: SettingName) => SETTINGS[name] as Setting<unknown>;
const WIDTH = 112;
const INDENT = 25;

/** Flag specs for every setting that has a flag: values are read as text and checked by the setting. */
export function settingFlags(): Record<string, FlagSpec> {
  const out: Record<string, FlagSpec> = {};
  for (const name of NAMES) {
    const s = setting(name);
    if (s.flag !== false)
      out[s.flag] = {
        type: s.repeatable ? "list" : "string",
        value: s.value,
        ...(s.choices ? { choices: s.choices } : {}),
      };
  }
  return out;
}

function wrap(words: string, first: string): string {
  const lines: string[] = [];
  let line = first.padEnd(INDENT);
  if (first.length >= INDENT - 1) {
    lines.push(first);
    line = " ".repeat(INDENT);
  }
  for (const word of words.split(" ")) {
    if (line.trim() && line.length + word.length + 1 > WIDTH && line.length > INDENT) {
      lines.push(line.trimEnd());
      line = " ".repeat(INDENT);
    }
    line += `${line.length > INDENT ? " " : ""}${word}`;
  }
  lines.push(line.trimEnd());
  return lines.join("\n");
}

/** The FLAGS sections of `serve --help`, one per group of settings. */
export function settingsHelp(): string {
  const sections: string[] = [];
  for (const [group, heading] of Object.entries(GROUPS)) {
    const lines: string[] = [];
    for (const name of NAMES) {
      const s = setting(name);
      if (s.group !== group) continue;
      const shown = s.shown(s.default);
      const where = [
        s.env.length ? `env ${s.env.join(" / ")}` : undefined,
        `file ${s.file}`,
        shown !== undefined ? `default ${shown}` : undefined,
      ]
        .filter(Boolean)
        .join("; ");
      const head = s.flag === false ? `  (${s.file})` : `  --${s.flag} ${s.value}`;
      lines.push(wrap(`${s.doc}${s.repeatable ? " (repeatable)" : ""} (${where})`, head));
    }
    sections.push(`${heading}\n${lines.join("\n")}`);
  }
  return sections.join("\n\n");
}

function tomlValue(name: SettingName, value: unknown): string {
  const s = setting(name);
  if (s.secret) return value === undefined ? "(not set)" : "(set)";
  if (s.redact) return JSON.stringify(s.redact(value));
  if (name === "skills") return `${(value as unknown[]).length} [[skills]] tables`;
  if (name === "extendedCard") {
    const card = value as { description?: string; skills: { id: string }[] };
    return `[extended_card] with ${card.description === undefined ? "the public description" : "its own description"} and skills ${JSON.stringify(card.skills.map((k) => k.id))}`;
  }
  if (name === "extensions")
    return (value as { uri: string; required?: boolean }[])
      .map((e) => `${e.uri}${e.required ? " (required)" : ""}`)
      .join(", ");
  if (typeof value === "string") return JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map((v) => JSON.stringify(v)).join(", ")}]`;
  return s.shown(value) ?? String(value);
}

/**
 * `serve --check`: every setting that has a value, written as it would be in config.toml, with where the
 * value came from. Secrets show only whether they are set.
 */
export function checkListing(home: string, configFile: string, config: ServeConfig, sources: Sources): string {
  const rows: [string, string][] = [];
  for (const name of NAMES) {
    const value = config[name];
    if (value === undefined && !setting(name).secret) continue;
    rows.push([`${setting(name).file} = ${tomlValue(name, value)}`, sources[name]]);
  }
  const width = Math.max(...rows.map(([l]) => l.length)) + 2;
  return (
    [
      `# home ${home}`,
      `# config file ${configFile}${existsSync(configFile) ? "" : " (not present: defaults, environment and flags only)"}`,
      ...rows.map(([l, from]) => `${l.padEnd(width)}# ${from}`),
    ].join("\n") + "\n"
  );
}

/**
 * `serve --check --json`: the configuration as the node uses it (secrets redacted), and each value's source, as
 * one JSON value on one line like every --json.
 */
export function checkJson(home: string, configFile: string, config: ServeConfig, sources: Sources): string {
  return `${JSON.stringify({ home, configFile, ...redacted(config), sources })}\n`;
}

/** The README's settings table (markdown); a test keeps the README's copy identical. */
export function settingsTable(): string {
  const rows = ["| config key | environment | flag | default | what it does |", "|---|---|---|---|---|"];
  for (const name of NAMES) {
    const s = setting(name);
    const shown = s.shown(s.default);
    const cell = (t: string) => t.replaceAll("|", "\\|");
    rows.push(
      `| \`${s.file}\` | ${s.env.map((e) => `\`${e}\``).join(" ") || "—"} | ${s.flag === false ? "—" : `\`--${s.flag}\``} | ${shown === undefined ? "—" : `\`${shown}\``} | ${cell(s.doc)} |`,
    );
  }
  return `${rows.join("\n")}\n`;
}
