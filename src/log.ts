/**
 * The daemon's log: one line per event on stdout, which systemd's journal (or any supervisor) captures. Two
 * shapes of the same line: JSON, one object per line with `time`, `level`, `msg` and the event's fields, for
 * the journal and log shippers; and text, `TIME LEVEL MESSAGE key=value ...`, for a person at a terminal.
 * Nothing secret is ever passed here: no keys, no API keys, no message bodies or task text. Task lines carry
 * the task id, the context id and the peer, so one task can be followed through the log.
 */
export interface Logger {
  info(message: string, fields?: Record<string, unknown>): void;
  warn(message: string, fields?: Record<string, unknown>): void;
  error(message: string, fields?: Record<string, unknown>): void;
}

export type LogLevel = "info" | "warn" | "error";
export const LOG_LEVELS: readonly LogLevel[] = ["info", "warn", "error"];

/** auto: JSON unless the log goes to a terminal (systemd, docker, a pipe or a file get JSON). */
export type LogFormat = "json" | "text";
export const LOG_FORMATS = ["auto", "json", "text"] as const;

/** The format `auto` stands for, given whether the log's stream is a terminal. */
export function resolveLogFormat(setting: string, isTerminal: boolean): LogFormat {
  if (setting === "json" || setting === "text") return setting;
  return isTerminal ? "text" : "json";
}

/** A logger whose level can change while it runs (SIGHUP reloads it). */
export interface LevelledLogger extends Logger {
  setLevel(level: LogLevel): void;
}

export function createLogger(
  write: (line: string) => void,
  level: LogLevel = "info",
  format: LogFormat = "text",
): LevelledLogger {
  let threshold = LOG_LEVELS.indexOf(level);
  const line = format === "json" ? jsonLine : textLine;
  const emit = (level: LogLevel, message: string, fields?: Record<string, unknown>) =>
    write(line(level, message, fields));
  return {
    info: (m, f) => void (threshold <= 0 && emit("info", m, f)),
    warn: (m, f) => void (threshold <= 1 && emit("warn", m, f)),
    error: (m, f) => emit("error", m, f),
    setLevel: (l) => void (threshold = LOG_LEVELS.indexOf(l)),
  };
}

let lastMs = 0;
let lastIso = "";
/** The time as ISO 8601, made once per millisecond however many lines share it. */
function isoNow(): string {
  const now = Date.now();
  if (now !== lastMs) {
    lastMs = now;
    lastIso = new Date(now).toISOString();
  }
  return lastIso;
}

function textLine(level: LogLevel, message: string, fields?: Record<string, unknown>): string {
  let out = `${isoNow()} ${level} ${message}`;
  if (fields) for (const k in fields) if (fields[k] !== undefined) out += ` ${k}=${fmt(fields[k])}`;
  return `${out}\n`;
}

/** `{"time":…,"level":…,"msg":…,…fields}`: the three fixed keys first, so every line starts the same way. */
function jsonLine(level: LogLevel, message: string, fields?: Record<string, unknown>): string {
  let out = `{"time":"${isoNow()}","level":"${level}","msg":${JSON.stringify(message)}`;
  if (fields) {
    // One native stringify of the whole object (a task line's fields are strings and numbers); field by field
    // only when a value needs help (an Error, a bigint, a cycle) or a key would shadow time, level or msg.
    let body: string | undefined;
    if (plain(fields))
      try {
        body = JSON.stringify(fields);
      } catch {}
    body ??= fieldByField(fields);
    if (body.length > 2) out += `,${body.slice(1, -1)}`;
  }
  return `${out}}\n`;
}

function plain(fields: Record<string, unknown>): boolean {
  for (const k in fields) {
    const v = fields[k];
    if (k === "time" || k === "level" || k === "msg" || v instanceof Error || typeof v === "bigint") return false;
  }
  return true;
}

function fieldByField(fields: Record<string, unknown>): string {
  let out = "";
  for (const k in fields) {
    const v = fields[k];
    if (v === undefined || k === "time" || k === "level" || k === "msg") continue;
    out += `,${JSON.stringify(k)}:${jsonValue(v)}`;
  }
  return `{${out.slice(1)}}`;
}

function jsonValue(v: unknown): string {
  if (v instanceof Error) return JSON.stringify(v.message);
  try {
    return JSON.stringify(v) ?? "null";
  } catch {
    return JSON.stringify(String(v)); // a cycle or a bigint: the line still parses
  }
}

function fmt(v: unknown): string {
  const s = typeof v === "string" ? v : v instanceof Error ? v.message : JSON.stringify(v);
  return /[\s"]/.test(s) ? JSON.stringify(s) : s;
}
