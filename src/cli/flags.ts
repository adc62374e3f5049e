import { suggest } from "./did-you-mean";
import { UsageError } from "./errors";

/** One flag of a command. `list` flags may repeat (`--san a --san b`). */
export interface FlagSpec {
  type: "string" | "boolean" | "number" | "list";
  /** Placeholder shown in errors, e.g. "DIR". */
  value?: string;
  /** The values it takes, when they are a fixed few (offered by shell completion; the command checks them). */
  choices?: readonly string[];
}

export type FlagValues<S extends Record<string, FlagSpec>> = {
  [K in keyof S]: S[K]["type"] extends "boolean"
    ? boolean
    : S[K]["type"] extends "number"
      ? number | undefined
      : S[K]["type"] extends "list"
        ? string[]
        : string | undefined;
};

export interface Parsed<S extends Record<string, FlagSpec>> {
  flags: FlagValues<S>;
  positionals: string[];
}

/**
 * Parses `--name value`, `--name=value` and boolean `--name`. Unknown flags are a usage error rather than
 * being ignored: a mistyped `--wiat` must not silently change what a command does (the error offers the flag it was
 * closest to).
 */
export function parseFlags<S extends Record<string, FlagSpec>>(argv: string[], spec: S): Parsed<S> {
  const flags: Record<string, unknown> = {};
  for (const [name, s] of Object.entries(spec))
    flags[name] = s.type === "list" ? [] : s.type === "boolean" ? false : undefined;
  const positionals: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === "--") {
      positionals.push(...argv.slice(i + 1));
      break;
    }
    if (!arg.startsWith("--") || arg === "-") {
      if (arg.startsWith("-") && arg.length > 1 && arg !== "-") throw new UsageError(`unknown flag '${arg}'`);
      positionals.push(arg);
      continue;
    }
    const eq = arg.indexOf("=");
    const name = eq === -1 ? arg.slice(2) : arg.slice(2, eq);
    const s = spec[name];
    if (!s) throw new UsageError(`unknown flag '--${name}'${suggest(name, Object.keys(spec), "--")}`);
    if (s.type === "boolean") {
      if (eq !== -1) {
        const v = arg.slice(eq + 1);
        if (v !== "true" && v !== "false") throw new UsageError(`--${name} takes no value (got '${v}')`);
        flags[name] = v === "true";
      } else flags[name] = true;
      continue;
    }
    let value: string;
    if (eq !== -1) value = arg.slice(eq + 1);
    else {
      if (i + 1 >= argv.length) throw new UsageError(`--${name} needs a value${s.value ? ` (${s.value})` : ""}`);
      value = argv[++i];
    }
    if (s.type === "number") {
      const n = Number(value);
      if (value.trim() === "" || !Number.isFinite(n))
        throw new UsageError(`--${name} must be a number (got '${value}')`);
      flags[name] = n;
    } else if (s.type === "list") (flags[name] as string[]).push(value);
    else flags[name] = value;
  }
  return { flags: flags as FlagValues<S>, positionals };
}

/** A positive integer flag within bounds, or a usage error naming the flag. */
export function intFlag(name: string, value: number | undefined, fallback: number, min: number, max: number): number {
  if (value === undefined) return fallback;
  if (!Number.isInteger(value) || value < min || value > max)
    throw new UsageError(`--${name} must be a whole number from ${min} to ${max} (got ${value})`);
  return value;
}
