/**
 * How deep a JSON text nests, found in one pass over its characters before it is parsed. A request nested
 * tens of thousands of levels costs JSON.parse and every later walk over it (validation, serialising it for
 * the store) time and stack out of all proportion to its size; refusing it before parsing costs a scan.
 */

/** Nesting that no A2A request needs; metadata deeper than this is refused. */
export const MAX_JSON_DEPTH = 64;

const OPEN_OBJECT = 0x7b; // {
const OPEN_ARRAY = 0x5b; // [
const CLOSE_OBJECT = 0x7d; // }
const CLOSE_ARRAY = 0x5d; // ]
const QUOTE = 0x22; // "
const BACKSLASH = 0x5c; // \

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
