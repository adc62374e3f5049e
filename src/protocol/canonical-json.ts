/**
 * RFC 8785, the JSON Canonicalization Scheme (JCS): one byte sequence per JSON value, so a signature over a
 * card (card-signature.ts) and the card's ETag are the same whoever serialised it and in whatever order.
 *
 * - object keys sorted by their UTF-16 code units (what Array.prototype.sort does to strings), at every level;
 * - numbers as ECMAScript writes them (JSON.stringify's Number::toString is exactly the serialisation the RFC
 *   specifies, -0 as 0); NaN and the infinities are not JSON and are refused;
 * - strings as JSON.stringify writes them: `"` and `\` escaped, U+0000..U+001F as \b \t \n \f \r or \u00xx
 *   (lower-case hex), everything else literal (U+2028, U+2029 and DEL included). A lone surrogate has no
 *   UTF-8 form, so it is refused rather than escaped;
 * - no whitespace. Values the JSON data model lacks (undefined, functions, symbols, bigint) are refused, except
 *   an undefined object member, which is left out as JSON.stringify leaves it out.
 */
export function canonicalJson(value: unknown): string {
  return write(value, "$");
}

/** A value RFC 8785 cannot serialise; `path` says where it is ($.a[2]). */
export class CanonicalJsonError extends Error {
  constructor(
    message: string,
    readonly path: string,
  ) {
    super(`${path}: ${message}`);
    this.name = "CanonicalJsonError";
  }
}

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

function write(value: unknown, path: string): string {
  if (value === null) return "null";
  switch (typeof value) {
    case "boolean":
      return value ? "true" : "false";
    case "number":
      if (!Number.isFinite(value)) throw new CanonicalJsonError(`${value} is not a JSON number`, path);
      return JSON.stringify(value);
    case "string":
      return string(value, path);
    case "object":
      break;
    default:
      throw new CanonicalJsonError(`a ${typeof value} is not JSON`, path);
  }
  const toJSON = (value as { toJSON?: unknown }).toJSON;
  if (typeof toJSON === "function") return write(toJSON.call(value), path);
  if (Array.isArray(value)) return `[${value.map((v, i) => write(v, `${path}[${i}]`)).join(",")}]`;
  const obj = value as Record<string, unknown>;
  const keys = Object.keys(obj)
    .filter((k) => obj[k] !== undefined)
    .sort();
  return `{${keys.map((k) => `${string(k, `${path} key`)}:${write(obj[k], `${path}.${k}`)}`).join(",")}}`;
}

function string(s: string, path: string): string {
  if (LONE_SURROGATE.test(s)) throw new CanonicalJsonError("a string with a lone surrogate has no UTF-8 form", path);
  return JSON.stringify(s);
}
