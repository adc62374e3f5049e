/**
 * What a setting is: one declaration holds its config-file key, environment variable, flag, placeholder,
 * default and doc line, and knows how to read its value from each source. The parser, `serve --help`,
 * `serve --check` and the example config's key list are all derived from these declarations, so a setting
 * cannot be documented in one place and parsed differently in another.
 *
 * A kind's readers throw a SettingProblem ("must be 0-65535 (got 70000)"); the resolver adds the source
 * (the flag, the environment variable or the config file's key), so the message names what the person typed.
 */
import { existsSync, readFileSync, statSync } from "node:fs";

/** A value that does not fit its setting; the message reads after the source's name. */
export class SettingProblem extends Error {}

export interface Setting<T> {
  /** snake_case key in config.toml; the environment variable is A2A_NODE_ + this in upper case. */
  readonly file: string;
  /** The serve flag without "--"; false for a setting only the config file can hold. */
  readonly flag: string | false;
  /** Environment variables, read in order; the first is A2A_NODE_<FILE KEY>. None for file-only settings. */
  readonly env: readonly string[];
  /** Placeholder in help ("PORT"). */
  readonly value: string;
  /** One line for help, the example config and --check. */
  readonly doc: string;
  /** The section of `serve --help` it is listed under. */
  readonly group: SettingGroup;
  readonly default: T;
  /** Shown as "(set)" / "(not set)" and never printed. */
  readonly secret?: boolean;
  /** Repeatable flag (a list). */
  readonly repeatable?: boolean;
  /** The only values it takes, when they are a fixed few. */
  readonly choices?: readonly string[];
  /** SIGHUP applies a new value without a restart. */
  readonly reloadable?: boolean;
  /** The value as `serve --check` and logs show it, when parts of it are secret (a database URL's password). */
  redact?(value: T): string;
  /** From a flag's or an environment variable's text. */
  fromText(text: string, source: "flag" | "env"): T;
  /** From a value in the config file (already TOML-typed). */
  fromFile(value: unknown): T;
  /** The default as a person would write it, for help ("3600", "0.75"); undefined when there is none. */
  shown(value: T): string | undefined;
}

export type SettingGroup =
  "listen" | "executor" | "limits" | "webhooks" | "card" | "pki" | "access" | "peers" | "daemon";

interface Common {
  file: string;
  /** Defaults to the file key with dashes; false for none. */
  flag?: string | false;
  /** Extra environment variables after A2A_NODE_<FILE KEY> (e.g. OPENAI_API_KEY). */
  envAlso?: string[];
  /** Environment variables instead of the derived one (a secret's value, where the file key names a file). */
  env?: string[];
  value: string;
  doc: string;
  group: SettingGroup;
  reloadable?: boolean;
}

function base(c: Common) {
  return {
    file: c.file,
    flag: c.flag === undefined ? c.file.replaceAll("_", "-") : c.flag,
    env: c.env ?? [`A2A_NODE_${c.file.toUpperCase()}`, ...(c.envAlso ?? [])],
    value: c.value,
    doc: c.doc,
    group: c.group,
    reloadable: c.reloadable,
  };
}

const got = (v: unknown) => (typeof v === "string" ? `'${v}'` : JSON.stringify(v));

function numberFrom(text: string): number {
  const n = Number(text);
  if (text.trim() === "" || !Number.isFinite(n)) throw new SettingProblem(`must be a number (got '${text}')`);
  return n;
}

function numberIn(v: unknown): number {
  if (typeof v !== "number" || !Number.isFinite(v)) throw new SettingProblem(`must be a number (got ${got(v)})`);
  return v;
}

/** A string, optionally one of a fixed list. */
export function text<D extends string | undefined>(
  c: Common & { default: D; choices?: readonly string[]; nonEmpty?: boolean },
): Setting<string | D> {
  const check = (v: string) => {
    if (c.choices && !c.choices.includes(v))
      throw new SettingProblem(`must be one of ${c.choices.join(", ")} (got '${v}')`);
    if (c.nonEmpty && v === "") throw new SettingProblem("must not be empty");
    return v;
  };
  return {
    ...base(c),
    default: c.default,
    choices: c.choices,
    fromText: check,
    fromFile: (v) => {
      if (typeof v !== "string") throw new SettingProblem(`must be a string (got ${got(v)})`);
      return check(v);
    },
    shown: (v) => v,
  };
}

/** One of a fixed few words, typed as their union (text() checks the choices). */
export function choice<T extends string>(c: Common & { default: T; choices: readonly T[] }): Setting<T> {
  return text(c) as Setting<T>;
}

/** An http(s) URL. */
export function url<D extends string | undefined>(c: Common & { default: D }): Setting<string | D> {
  const check = (v: string) => {
    let u: URL | undefined;
    try {
      u = new URL(v);
    } catch {}
    if (!u || (u.protocol !== "http:" && u.protocol !== "https:"))
      throw new SettingProblem(`must be an http(s) URL (got '${v}')`);
    return v;
  };
  return {
    ...base(c),
    default: c.default,
    fromText: check,
    fromFile: (v) => {
      if (typeof v !== "string") throw new SettingProblem(`must be an http(s) URL (got ${got(v)})`);
      return check(v);
    },
    shown: (v) => v,
  };
}

/** A number within bounds; `integer` for whole numbers. `above` excludes the lower bound itself. */
export function number<D extends number | undefined>(
  c: Common & { default: D; min: number; max: number; integer?: boolean; above?: boolean; unit?: string },
): Setting<number | D> {
  const range = `${c.above ? `above ${c.min} and at most ${c.max}` : `${c.min}-${c.max}`}${c.unit ? ` ${c.unit}` : ""}`;
  const check = (n: number) => {
    const inRange = (c.above ? n > c.min : n >= c.min) && n <= c.max;
    if (!inRange || (c.integer && !Number.isInteger(n)))
      throw new SettingProblem(`must be ${c.integer ? "a whole number " : ""}${range} (got ${n})`);
    return n;
  };
  return {
    ...base(c),
    default: c.default,
    fromText: (t) => check(numberFrom(t)),
    fromFile: (v) => check(numberIn(v)),
    shown: (v) => (v === undefined ? undefined : String(v)),
  };
}

/** A duration written in seconds (flag, environment, file), held in milliseconds. */
export function seconds<D extends number | undefined>(
  c: Common & { default: D; min: number; max: number },
): Setting<number | D> {
  const check = (s: number) => {
    if (!(s >= c.min && s <= c.max)) throw new SettingProblem(`must be ${c.min}-${c.max} seconds (got ${s})`);
    return Math.round(s * 1000);
  };
  return {
    ...base(c),
    default: c.default,
    fromText: (t) => check(numberFrom(t)),
    fromFile: (v) => check(numberIn(v)),
    shown: (v) => (v === undefined ? undefined : String(v / 1000)),
  };
}

/** A list of strings: a TOML array, a comma-separated environment variable, or a repeated flag. */
export function list(c: Common & { default: string[]; item: (v: string) => string }): Setting<string[]> {
  const each = (items: string[]) => items.map((i) => c.item(i));
  return {
    ...base(c),
    default: c.default,
    repeatable: true,
    fromText: (t) =>
      each(
        t
          .split(",")
          .map((s) => s.trim())
          .filter(Boolean),
      ),
    fromFile: (v) => {
      if (!Array.isArray(v) || v.some((i) => typeof i !== "string"))
        throw new SettingProblem(`must be a list of strings (got ${got(v)})`);
      return each(v);
    },
    shown: (v) => (v.length ? v.join(",") : undefined),
  };
}

/**
 * A database URL (postgres:// or postgresql://). It may carry a password: `serve --check` and the logs show it
 * with the password replaced (`redact`); a file key for it, like a secret's, keeps it out of the config file.
 */
export function databaseUrl(c: Common & { redact: (v: string) => string }): Setting<string | undefined> {
  const check = (v: string) => {
    let u: URL | undefined;
    try {
      u = new URL(v);
    } catch {}
    if (!u || (u.protocol !== "postgres:" && u.protocol !== "postgresql:"))
      throw new SettingProblem(`must be a postgres:// URL (got '${c.redact(v)}')`);
    return v;
  };
  return {
    ...base(c),
    default: undefined,
    redact: (v) => (v === undefined ? "" : c.redact(v)),
    fromText: check,
    fromFile: (v) => {
      if (typeof v !== "string") throw new SettingProblem(`must be a postgres:// URL (got ${got(v)})`);
      return check(v);
    },
    shown: () => undefined,
  };
}

/**
 * A secret: its value comes from the environment, or from a 0600 file named by the flag or the config file
 * (`*_file`). It never appears in the config file itself, in help, or in --check.
 */
export function secret(c: Common): Setting<string | undefined> {
  return {
    ...base(c),
    default: undefined,
    secret: true,
    fromText: (t, source) => (source === "env" ? t || undefined : readSecretFile(t)),
    fromFile: (v) => {
      if (typeof v !== "string") throw new SettingProblem(`must be a file name (got ${got(v)})`);
      return readSecretFile(v);
    },
    shown: () => undefined,
  };
}

/** A structured value only the config file can hold (TOML tables such as [[skills]]). */
export function table<T>(
  c: Omit<Common, "flag" | "envAlso" | "env"> & { default: T; read: (v: unknown) => T },
): Setting<T> {
  return {
    ...base({ ...c, flag: false }),
    env: [],
    default: c.default,
    fromText: () => c.default,
    fromFile: c.read,
    shown: () => undefined,
  };
}

/**
 * A key kept in a file must be readable by its owner only (0600), like a private key. The problem says how
 * to fix it; the key itself is never part of a message.
 */
export function readSecretFile(path: string): string {
  if (!existsSync(path)) throw new SettingProblem(`names ${path}, which does not exist`);
  if ((statSync(path).mode & 0o077) !== 0)
    throw new SettingProblem(`names ${path}, which is readable by others; run: chmod 600 ${path}`);
  const key = readFileSync(path, "utf8").trim();
  if (!key) throw new SettingProblem(`names ${path}, which is empty`);
  return key;
}
