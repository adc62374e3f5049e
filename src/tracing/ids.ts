/** Random trace and span ids, as the W3C spec asks: from a strong source, never all zero. */
const hex = (bytes: Uint8Array): string => {
  let s = "";
  for (const b of bytes) s += b.toString(16).padStart(2, "0");
  return s;
};

function randomHex(bytes: number): string {
  const buf = new Uint8Array(bytes);
  // An all-zero id is invalid; the chance is 2^-64 at worst, but the loop costs nothing to make it never.
  do crypto.getRandomValues(buf);
  while (buf.every((b) => b === 0));
  return hex(buf);
}

export const newTraceId = (): string => randomHex(16);
export const newSpanId = (): string => randomHex(8);
