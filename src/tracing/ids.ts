/**
 * Random trace and span ids, as the W3C spec asks: from a strong source, never all zero. Random bytes are
 * drawn 4 KiB at a time: one call to the system's generator per 512 span ids, not one per span.
 */
const POOL = new Uint8Array(4096);
let used = POOL.length;

function randomHex(bytes: number): string {
  for (;;) {
    if (used + bytes > POOL.length) {
      crypto.getRandomValues(POOL);
      used = 0;
    }
    const id = Buffer.from(POOL.buffer, used, bytes).toString("hex");
    used += bytes;
    // An all-zero id is invalid; the chance is 2^-64 at worst, but the loop costs nothing to make it never.
    if (!/^0+$/.test(id)) return id;
  }
}

export const newTraceId = (): string => randomHex(16);
export const newSpanId = (): string => randomHex(8);
