/**
 * Arbitrary bytes into every message type of the schema: the codec answers each with a value or a
 * DecodeError, never another exception (which the server would turn into INTERNAL) and never a hang.
 * Deterministic: a fixed-seed generator, so a failure names a case that can be replayed.
 */
import { describe, expect, it } from "vitest";
import { a2aCodec, SCHEMA } from "../../src/grpc/a2a-service";
import { DecodeError } from "../../src/grpc/codec";
import { task } from "./fixtures";

/** mulberry32: small, fast, good enough to spread bytes. */
function random(seed: number) {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const codec = a2aCodec();

function outcome(type: string, bytes: Uint8Array): "ok" | "refused" {
  try {
    codec.decode(type, bytes);
    return "ok";
  } catch (e) {
    if (e instanceof DecodeError) return "refused";
    throw new Error(`${type} threw ${(e as Error).name} on ${Buffer.from(bytes).toString("hex")}: ${(e as Error).message}`);
  }
}

describe("decoding arbitrary bytes", () => {
  it("random bytes: a value or a DecodeError for every message type", () => {
    const next = random(23);
    const tally = { ok: 0, refused: 0 };
    for (const type of Object.keys(SCHEMA.messages)) {
      for (let i = 0; i < 200; i++) {
        const bytes = new Uint8Array(Math.floor(next() * 64)).map(() => Math.floor(next() * 256));
        tally[outcome(type, bytes)]++;
      }
    }
    // Both outcomes occur, so the loop exercised the decoder rather than failing (or passing) everything.
    expect(tally.ok).toBeGreaterThan(0);
    expect(tally.refused).toBeGreaterThan(0);
  });

  it("a valid Task with single bytes flipped or cut: a value or a DecodeError", () => {
    const next = random(24);
    const good = codec.encode("lf.a2a.v1.Task", task);
    for (let i = 0; i < 2000; i++) {
      const bytes = good.slice(0, 1 + Math.floor(next() * good.length));
      bytes[Math.floor(next() * bytes.length)] ^= 1 << Math.floor(next() * 8);
      outcome("lf.a2a.v1.Task", bytes);
    }
    expect(outcome("lf.a2a.v1.Task", good)).toBe("ok");
  });
});
