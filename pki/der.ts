/**
 * Just enough DER to walk a CRL or a certificate with node:crypto alone: each element's tag, its content, and
 * its whole encoding (what a signature covers). Lengths must be minimal and within the buffer; anything else
 * throws, and callers turn that into their own error.
 */
export interface Tlv {
  tag: number;
  /** The content octets. */
  value: Buffer;
  /** The whole element: tag, length and content. */
  raw: Buffer;
}

export function readTlv(buf: Buffer, at = 0): Tlv & { end: number } {
  if (at + 2 > buf.length) throw new Error("truncated DER");
  const tag = buf[at];
  if ((tag & 0x1f) === 0x1f) throw new Error("multi-byte DER tags are not used here");
  let len = buf[at + 1];
  let head = 2;
  if (len & 0x80) {
    const n = len & 0x7f;
    if (n === 0 || n > 4) throw new Error("bad DER length");
    if (at + 2 + n > buf.length) throw new Error("truncated DER");
    len = 0;
    for (let i = 0; i < n; i++) len = len * 256 + buf[at + 2 + i];
    if (len < 0x80 || buf[at + 2] === 0) throw new Error("DER length not minimal");
    head += n;
  }
  const end = at + head + len;
  if (end > buf.length) throw new Error("truncated DER");
  return { tag, value: buf.subarray(at + head, end), raw: buf.subarray(at, end), end };
}

/** The elements inside a constructed element's content, in order. */
export function children(value: Buffer): Tlv[] {
  const out: Tlv[] = [];
  for (let at = 0; at < value.length;) {
    const t = readTlv(value, at);
    out.push(t);
    at = t.end;
  }
  return out;
}

/** Reads exactly one element spanning the whole buffer. */
export function readOne(buf: Buffer): Tlv {
  const t = readTlv(buf, 0);
  if (t.end !== buf.length) throw new Error("trailing bytes after DER");
  return t;
}

export const TAG = {
  INTEGER: 0x02,
  BIT_STRING: 0x03,
  OCTET_STRING: 0x04,
  OID: 0x06,
  UTC_TIME: 0x17,
  GENERALIZED_TIME: 0x18,
  SEQUENCE: 0x30,
} as const;

/** An INTEGER's content as uppercase hex without leading zeros (how serials are compared). */
export function integerHex(t: Tlv): string {
  if (t.tag !== TAG.INTEGER || t.value.length === 0) throw new Error("not an INTEGER");
  return t.value
    .toString("hex")
    .toUpperCase()
    .replace(/^0+(?=.)/, "");
}

/** UTCTime (YYMMDDHHMMSSZ) or GeneralizedTime (YYYYMMDDHHMMSSZ), as RFC 5280 allows them. */
export function time(t: Tlv): Date {
  const s = t.value.toString("latin1");
  let m: RegExpExecArray | null;
  if (t.tag === TAG.UTC_TIME && (m = /^(\d\d)(\d\d)(\d\d)(\d\d)(\d\d)(\d\d)Z$/.exec(s))) {
    const yy = Number(m[1]);
    return new Date(
      Date.UTC(
        yy >= 50 ? 1900 + yy : 2000 + yy,
        Number(m[2]) - 1,
        Number(m[3]),
        Number(m[4]),
        Number(m[5]),
        Number(m[6]),
      ),
    );
  }
  if (t.tag === TAG.GENERALIZED_TIME && (m = /^(\d{4})(\d\d)(\d\d)(\d\d)(\d\d)(\d\d)Z$/.exec(s)))
    return new Date(Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3]), Number(m[4]), Number(m[5]), Number(m[6])));
  throw new Error("not a UTCTime or GeneralizedTime");
}
