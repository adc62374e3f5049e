/**
 * Python's `json.dumps`, byte for byte, for the values the Hermes A2A plugin serializes (objects, arrays,
 * strings, integers, booleans, null, and the few floats of its /metrics). The twin must write what Python
 * writes: its default separators are ", " and ": " (not JSON.stringify's compact form), `ensure_ascii=True`
 * (the default, used for every plain JSON response) escapes everything beyond ASCII as \uXXXX, and the push
 * signature is an HMAC over `json.dumps(payload, sort_keys=True, ensure_ascii=False)`, which a receiver can
 * only check by producing those exact bytes again.
 */

export interface PyJsonOptions {
  sortKeys?: boolean;
  /** Python's default is true. */
  ensureAscii?: boolean;
}

const SHORT: Record<string, string> = {
  '"': '\\"',
  "\\": "\\\\",
  "\n": "\\n",
  "\r": "\\r",
  "\t": "\\t",
  "\b": "\\b",
  "\f": "\\f",
};

function pyString(s: string, ensureAscii: boolean): string {
  let out = '"';
  for (let i = 0; i < s.length; i++) {
    const ch = s[i];
    const code = s.charCodeAt(i);
    if (SHORT[ch] !== undefined) out += SHORT[ch];
    else if (code < 0x20 || (ensureAscii && code > 0x7e)) out += `\\u${code.toString(16).padStart(4, "0")}`;
    else out += ch;
  }
  return `${out}"`;
}

/** Python's float repr for the values /metrics holds (round(x, 1)): always with a decimal point. */
export class PyFloat {
  constructor(readonly value: number) {}
}

/** Python compares str keys by code point; JavaScript's default sort compares UTF-16 units. */
function byCodePoint(a: string, b: string): number {
  const x = [...a];
  const y = [...b];
  for (let i = 0; i < Math.min(x.length, y.length); i++) {
    const d = (x[i].codePointAt(0) ?? 0) - (y[i].codePointAt(0) ?? 0);
    if (d !== 0) return d;
  }
  return x.length - y.length;
}

export function pyDumps(value: unknown, options: PyJsonOptions = {}): string {
  const ensureAscii = options.ensureAscii ?? true;
  const enc = (v: unknown): string => {
    if (v === null || v === undefined) return "null";
    if (v instanceof PyFloat) return Number.isInteger(v.value) ? `${v.value}.0` : String(v.value);
    if (typeof v === "boolean") return v ? "true" : "false";
    if (typeof v === "number") return String(v);
    if (typeof v === "string") return pyString(v, ensureAscii);
    if (Array.isArray(v)) return v.length ? `[${v.map(enc).join(", ")}]` : "[]";
    const entries = Object.entries(v as Record<string, unknown>).filter(([, x]) => x !== undefined);
    if (options.sortKeys) entries.sort(([a], [b]) => byCodePoint(a, b));
    return entries.length ? `{${entries.map(([k, x]) => `${pyString(k, ensureAscii)}: ${enc(x)}`).join(", ")}}` : "{}";
  };
  return enc(value);
}
