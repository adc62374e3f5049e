/**
 * The daemon's log: one line per event on stderr, which systemd's journal captures. Fields are key=value so
 * lines can be grepped. Nothing secret is ever passed here (no keys, no API keys, no message bodies).
 */
export interface Logger {
  info(message: string, fields?: Record<string, unknown>): void;
  warn(message: string, fields?: Record<string, unknown>): void;
  error(message: string, fields?: Record<string, unknown>): void;
}

export type LogLevel = "info" | "warn" | "error";
export const LOG_LEVELS: readonly LogLevel[] = ["info", "warn", "error"];

/** A logger whose level can change while it runs (SIGHUP reloads it). */
export interface LevelledLogger extends Logger {
  setLevel(level: LogLevel): void;
}

export function createLogger(write: (line: string) => void, level: LogLevel = "info"): LevelledLogger {
  let threshold = LOG_LEVELS.indexOf(level);
  const line = (level: string, message: string, fields?: Record<string, unknown>) => {
    let out = `${new Date().toISOString()} ${level} ${message}`;
    if (fields) for (const [k, v] of Object.entries(fields)) if (v !== undefined) out += ` ${k}=${fmt(v)}`;
    write(`${out}\n`);
  };
  return {
    info: (m, f) => void (threshold <= 0 && line("info", m, f)),
    warn: (m, f) => void (threshold <= 1 && line("warn", m, f)),
    error: (m, f) => line("error", m, f),
    setLevel: (l) => void (threshold = LOG_LEVELS.indexOf(l)),
  };
}

function fmt(v: unknown): string {
  const s = typeof v === "string" ? v : JSON.stringify(v);
  return /[\s"]/.test(s) ? JSON.stringify(s) : s;
}
