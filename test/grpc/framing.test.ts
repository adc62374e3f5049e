/** gRPC length-prefixed messages: split and joined DATA chunks, the size limit, compression refused. */
import { describe, expect, it } from "vitest";
import { FramingError, MessageReader, frame } from "../../src/grpc/framing";

const bytes = (...b: number[]) => new Uint8Array(b);

describe("frame", () => {
  it("prefixes a flag byte and the big-endian length", () => {
    expect([...frame(bytes(7, 8, 9))]).toEqual([0, 0, 0, 0, 3, 7, 8, 9]);
    expect([...frame(new Uint8Array(0))]).toEqual([0, 0, 0, 0, 0]);
    expect([...frame(new Uint8Array(0x10203)).subarray(0, 5)]).toEqual([0, 0, 1, 2, 3]);
  });
});

describe("MessageReader", () => {
  it("reads several messages from one chunk, and one message from many chunks", () => {
    const all = new Uint8Array([...frame(bytes(1)), ...frame(bytes()), ...frame(bytes(2, 3, 4))]);
    expect(new MessageReader().push(all).map((m) => [...m])).toEqual([[1], [], [2, 3, 4]]);
    const r = new MessageReader();
    const got: number[][] = [];
    for (const b of all) got.push(...r.push(bytes(b)).map((m) => [...m]));
    expect(got).toEqual([[1], [], [2, 3, 4]]);
    expect(r.pending()).toBe(0);
  });

  it("keeps a partial message pending until its last byte", () => {
    const r = new MessageReader();
    const f = frame(bytes(5, 6, 7, 8));
    expect(r.push(f.subarray(0, 3))).toEqual([]);
    expect(r.push(f.subarray(3, 7))).toEqual([]);
    expect(r.pending()).toBe(7);
    expect(r.push(f.subarray(7)).map((m) => [...m])).toEqual([[5, 6, 7, 8]]);
  });

  it("refuses a declared length over the limit at its header, before buffering the body", () => {
    const r = new MessageReader(10);
    expect(r.push(frame(new Uint8Array(10))).length).toBe(1);
    const err = (() => {
      try {
        r.push(bytes(0, 0, 0, 0, 11));
      } catch (e) {
        return e;
      }
    })();
    expect(err).toBeInstanceOf(FramingError);
    expect((err as FramingError).code).toBe("RESOURCE_EXHAUSTED");
    expect(() => new MessageReader().push(bytes(0, 0xff, 0xff, 0xff, 0xff))).toThrow(/over the limit of 4194304/);
  });

  it("a compressed message is UNIMPLEMENTED (we accept no grpc-encoding); another flag byte is INTERNAL", () => {
    expect(() => new MessageReader().push(bytes(1, 0, 0, 0, 0))).toThrow(
      expect.objectContaining({ code: "UNIMPLEMENTED" }),
    );
    expect(() => new MessageReader().push(bytes(2, 0, 0, 0, 0))).toThrow(expect.objectContaining({ code: "INTERNAL" }));
  });
});
