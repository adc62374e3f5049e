/**
 * The daemon's log: one line per event on stderr, which systemd's journal captures. Fields are key=value so
 * lines can be grepped. Nothing secret is ever passed here (no keys, no API keys, no message bodies).
 */
export interface Logger {
  info(message: string, fields?: Record<string, unknown>): void;
  warn(message: string, fields?: Record<string, unknown>): void;
  error(message: string, fields?: Record<string, unknown>): void;
}

export function createLogger(write: (line: string) => void, quiet = false): Logger {
  const line = (level: string, message: string, fields?: Record<string, unknown>) => {
    let out = `${new Date().toISOString()} ${level} ${message}`;
    if (fields) for (const [k, v] of Object.entries(fields)) if (v !== undefined) out += ` ${k}=${fmt(v)}`;
    write(`${out}\n`);
  };
  return {
    info: (m, f) => void (!quiet && line("info", m, f)),
    warn: (m, f) => line("warn", m, f),
    error: (m, f) => line("error", m, f),
  };
}

function fmt(v: unknown): string {
  const s = typeof v === "string" ? v : JSON.stringify(v);
  return /[\s"]/.test(s) ? JSON.stringify(s) : s;
}
