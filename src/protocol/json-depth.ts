/**
 * What a JSON text holds that JSON.parse would not report, found in one pass over its characters before it is
 * parsed:
 * - how deep it nests: a request nested tens of thousands of levels costs JSON.parse and every later walk
 *   over it (validation, serialising it for the store) time and stack out of all proportion to its size;
 * - numbers a 64-bit float cannot hold: JSON.parse turns `1e400` into Infinity (stored, and read back, as
 *   null) and `123456789012345678901234567890` into 1.2345678901234568e+29, silently. The node keeps what a
 *   caller stores as parsed, so such a number is refused instead of changed.
 */

/** Nesting that no A2A request needs; metadata deeper than this is refused. */
export const MAX_JSON_DEPTH = 64;

const OPEN_OBJECT = 0x7b; // {
const OPEN_ARRAY = 0x5b; // [
const CLOSE_OBJECT = 0x7d; // }
const CLOSE_ARRAY = 0x5d; // ]
const QUOTE = 0x22; // "
const BACKSLASH = 0x5c; // \
const MINUS = 0x2d; // -
const ZERO = 0x30;
const NINE = 0x39;

/**
 * True when `text` opens more than `max` objects/arrays inside one another. Brackets inside strings do not
 * count (escaped quotes are honoured). Malformed text is not judged here: JSON.parse reports it.
 */
export function nestsDeeperThan(text: string, max: number = MAX_JSON_DEPTH): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === BACKSLASH) i++;
      else if (c === QUOTE) inString = false;
    } else if (c === QUOTE) inString = true;
    else if (c === OPEN_OBJECT || c === OPEN_ARRAY) {
      if (++depth > max) return true;
    } else if (c === CLOSE_OBJECT || c === CLOSE_ARRAY) depth--;
  }
  return false;
}

/** What scanJson found. */
export interface JsonScan {
  /** More than `max` objects/arrays open inside one another. */
  tooDeep: boolean;
  /** The first number (as written) a 64-bit float cannot hold exactly, if any. */
  inexact?: string;
}

/**
 * One pass over `text`: its nesting (as nestsDeeperThan; the scan stops early once too deep) and its
 * numbers (see keepsExactly). Malformed text is not judged here: JSON.parse reports it, and callers report a
 * parse error before an inexact number.
 */
export function scanJson(text: string, max: number = MAX_JSON_DEPTH): JsonScan {
  let depth = 0;
  let inString = false;
  let inexact: string | undefined;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === BACKSLASH) i++;
      else if (c === QUOTE) inString = false;
    } else if (c === QUOTE) inString = true;
    else if (c === OPEN_OBJECT || c === OPEN_ARRAY) {
      if (++depth > max) return { tooDeep: true };
    } else if (c === CLOSE_OBJECT || c === CLOSE_ARRAY) depth--;
    else if (c === MINUS || (c >= ZERO && c <= NINE)) {
      let end = i + 1;
      while (end < text.length && isNumberChar(text.charCodeAt(end))) end++;
      if (inexact === undefined) {
        const literal = text.slice(i, end);
        if (!keepsExactly(literal)) inexact = literal;
      }
      i = end - 1;
    }
  }
  return inexact === undefined ? { tooDeep: false } : { tooDeep: false, inexact };
}

function isNumberChar(c: number): boolean {
  // digits, ".", "e", "E", "+", "-"
  return (c >= ZERO && c <= NINE) || c === 0x2e || c === 0x65 || c === 0x45 || c === 0x2b || c === MINUS;
}

/**
 * Whether JSON.parse reads this number literal as the very number it writes: the value, not the spelling
 * (`1.0`, `1e2` and `100` are kept; `0.1` is kept, since it reads back as `0.1`). Refused: a number too
 * large for a float (`1e400`, read as Infinity), too small (`1e-400`, read as 0), or with more significant
 * digits than a float keeps (`123456789012345678901234567890`, `0.30000000000000001`).
 */
export function keepsExactly(literal: string): boolean {
  // Up to 15 significant digits and no exponent: every such decimal survives a float and back (DBL_DIG).
  if (literal.length <= 15 && !/[eE]/.test(literal)) return true;
  const n = Number(literal);
  if (!Number.isFinite(n)) return false;
  return decimalValue(literal) === decimalValue(String(n));
}

/** A number's value written one way only: sign, significant digits without leading or trailing zeros, exponent. */
function decimalValue(num: string): string {
  let at = 0;
  const negative = num.charCodeAt(0) === MINUS;
  if (negative) at = 1;
  const e = num.search(/[eE]/);
  const mantissa = e === -1 ? num.slice(at) : num.slice(at, e);
  let exponent = e === -1 ? 0 : Number(num.slice(e + 1));
  const dot = mantissa.indexOf(".");
  let digits = dot === -1 ? mantissa : mantissa.slice(0, dot) + mantissa.slice(dot + 1);
  if (dot !== -1) exponent -= mantissa.length - dot - 1;
  digits = digits.replace(/^0+/, "");
  if (digits === "") return "0";
  const trimmed = digits.replace(/0+$/, "");
  exponent += digits.length - trimmed.length;
  return `${negative ? "-" : ""}${trimmed}e${exponent}`;
}

/** The -32602 message for a number keepsExactly refuses. */
export function inexactNumber(literal: string): string {
  const shown = literal.length > 40 ? `${literal.slice(0, 40)}...` : literal;
  const read = Number(literal);
  return `the request holds the number ${shown}, which this node cannot keep exactly (it keeps JSON numbers as 64-bit floats, which would read it back as ${Number.isFinite(read) ? String(read) : "null"}); send it as a string`;
}
