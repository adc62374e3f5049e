import { encodeTime } from "ulid";

/*
 * Ids and timestamps, at the bottom of the tree: tasks, push deliveries, stores, executors and the CLI all make
 * them. Several of each per task: on the per-task path, so both reuse what they computed for the current
 * millisecond instead of formatting the time again on every call (the `ulid` package's own factory re-encodes
 * the time on every id, which measured as the largest single cost of the node's JavaScript per task).
 */

const ENCODING = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"; // Crockford's base32, as ULIDs use
const HALF = 2 ** 40; // the 80 random bits, kept as two 40-bit halves (8 characters each)

/** Every 10-bit value as its two base32 characters, so 40 bits encode in four look-ups. */
const PAIRS = Array.from({ length: 1024 }, (_, v) => ENCODING[v >>> 5] + ENCODING[v & 31]);

function encode40(n: number): string {
  const high = Math.floor(n / 2 ** 20); // 20 bits each: small enough for bitwise operators
  const low = n % 2 ** 20;
  return PAIRS[high >>> 10] + PAIRS[high & 1023] + PAIRS[low >>> 10] + PAIRS[low & 1023];
}

/** 40 random bits from the system's CSPRNG. */
function random40(): number {
  const b = crypto.getRandomValues(new Uint8Array(5));
  return b[0] * 2 ** 32 + ((b[1] << 24) >>> 0) + (b[2] << 16) + (b[3] << 8) + b[4];
}

/**
 * A monotonic ULID factory (https://github.com/ulid/spec): 48 bits of milliseconds, then 80 random bits drawn
 * afresh each millisecond and incremented by one for each further id in the same millisecond, so ids made by
 * one process always sort in the order they were made. The time prefix comes from the `ulid` package's
 * encoder and is reused for the whole millisecond; if the clock steps back, the last millisecond is kept.
 */
export function ulidFactory(clock: () => number = Date.now, random: () => number = random40): () => string {
  let lastMs = -1;
  let timePart = "";
  let hi = 0;
  let hiPart = "";
  let lo = 0;
  return () => {
    const ms = clock();
    if (ms > lastMs) {
      lastMs = ms;
      timePart = encodeTime(ms, 10);
      hi = random();
      hiPart = encode40(hi);
      lo = random();
    } else if (++lo === HALF) {
      lo = 0;
      // 2^40 ids within one millisecond would have to be made before the high half overflows.
      hi = (hi + 1) % HALF;
      hiPart = encode40(hi);
    }
    return timePart + hiPart + encode40(lo);
  };
}

/** ULIDs sort by creation time, and within one millisecond by the order they were made. */
export const newId: () => string = ulidFactory();

let isoMs = -1;
let iso = "";

/** Timestamps as the protocol wants them: ISO-8601 UTC with milliseconds. */
export function now(): string {
  const ms = Date.now();
  if (ms !== isoMs) {
    isoMs = ms;
    iso = new Date(ms).toISOString();
  }
  return iso;
}
