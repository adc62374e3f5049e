import { describe, expect, it } from "vitest";
import { keyOf, RefusalTally, type Repeats } from "../../src/server/refusal-tally";

interface R {
  kind: string;
  remote?: string;
  fingerprint?: string;
  n: number;
}

function tally(keysPerWindow = 20) {
  let t = Date.parse("2026-12-02T10:00:00.000Z");
  const written: { r: R; repeats?: Repeats }[] = [];
  const tal = new RefusalTally<R>({
    write: (r, repeats) => written.push(repeats ? { r, repeats } : { r }),
    key: keyOf,
    kind: (r) => r.kind,
    keysPerWindow,
    now: () => t,
  });
  return { tal, written, advance: (ms: number) => void (t += ms) };
}

describe("RefusalTally: refusals summed per source and kind before the audit log", () => {
  it("writes the first of each source and kind at once, and the rest as one line when the window ends", () => {
    const { tal, written, advance } = tally();
    for (let n = 1; n <= 1000; n++) tal.add({ kind: "unknown_token", remote: "10.0.0.7", n });
    tal.add({ kind: "unknown_token", remote: "10.0.0.8", n: 1001 });
    tal.add({ kind: "foreign_ca", remote: "10.0.0.7", n: 1002 });
    expect(written.map((w) => w.r.n)).toEqual([1, 1001, 1002]);
    advance(5000);
    tal.flush();
    expect(written.slice(3)).toEqual([
      {
        r: expect.objectContaining({ n: 1, remote: "10.0.0.7" }),
        repeats: { more: 999, since: "2026-12-02T10:00:00.000Z" },
      },
    ]);
    // A new window: the next refusal of that source and kind is written in full again.
    tal.add({ kind: "unknown_token", remote: "10.0.0.7", n: 1003 });
    expect(written.at(-1)).toEqual({ r: expect.objectContaining({ n: 1003 }) });
    tal.flush();
    expect(written).toHaveLength(5); // nothing more to say
  });

  it("counts an IPv6 /64 as one source, an IPv4-mapped address as its IPv4 one", () => {
    const { tal, written } = tally();
    for (let i = 1; i <= 50; i++) tal.add({ kind: "no_certificate", remote: `2001:db8:1::${i.toString(16)}`, n: i });
    tal.add({ kind: "no_certificate", remote: "::ffff:10.0.0.7", n: 51 });
    tal.add({ kind: "no_certificate", remote: "10.0.0.7", n: 52 });
    tal.flush();
    expect(written.map((w) => [w.r.n, w.repeats?.more])).toEqual([
      [1, undefined],
      [51, undefined],
      [1, 49],
      [51, 1],
    ]);
  });

  it("past keysPerWindow distinct keys, sums by kind alone: a flood from many sources stays a few lines", () => {
    const { tal, written } = tally(3);
    for (let i = 0; i < 10_000; i++)
      tal.add({ kind: "unknown_token", remote: `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`, n: i });
    expect(written.map((w) => w.r.n)).toEqual([0, 1, 2]);
    tal.flush();
    expect(written).toHaveLength(4);
    expect(written[3].repeats).toEqual({ more: 10_000 - 3, since: expect.any(String), sources: 10_000 - 3 });
  });

  it("keeps refused certificates apart by fingerprint: one source, two revoked members, two first lines", () => {
    const { tal, written } = tally();
    tal.add({ kind: "revoked", remote: "10.0.0.7", fingerprint: "AA", n: 1 });
    tal.add({ kind: "revoked", remote: "10.0.0.7", fingerprint: "BB", n: 2 });
    tal.add({ kind: "revoked", remote: "10.0.0.7", fingerprint: "AA", n: 3 });
    expect(written.map((w) => w.r.n)).toEqual([1, 2]);
  });
});
