import { describe, expect, it } from "vitest";
import { canonicalJson, CanonicalJsonError } from "../../src/protocol/canonical-json";

/** The IEEE 754 double with these 16 hex digits (RFC 8785 Appendix B writes its examples so). */
function double(hex: string): number {
  const view = new DataView(new ArrayBuffer(8));
  view.setBigUint64(0, BigInt(`0x${hex}`));
  return view.getFloat64(0);
}

describe("canonicalJson (RFC 8785)", () => {
  it("serialises the RFC's section 3.2.2 example byte for byte", () => {
    // The input as the RFC writes it, parsed by JSON.parse (so 4.50, 1E30, 2e-3 and the escapes are the parser's).
    const input = JSON.parse(
      '{"numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001], "string": "\\u20ac$\\u000F\\u000aA\'\\u0042\\u0022\\u005c\\\\\\"\\/", "literals": [null, true, false]}',
    );
    expect(canonicalJson(input)).toBe(
      '{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],"string":"€$\\u000f\\nA\'B\\"\\\\\\\\\\"/"}',
    );
  });

  it("sorts keys by UTF-16 code units, as the RFC's section 3.2.3 example", () => {
    const input = {
      "\u20ac": "Euro Sign",
      "\r": "Carriage Return",
      "\ufb33": "Hebrew Letter Dalet With Dagesh",
      "1": "One",
      "\ud83d\ude00": "Emoji: Grinning Face",
      "\u0080": "Control",
      "\u00f6": "Latin Small Letter O With Diaeresis",
    };
    // Read from the text: Object.keys would put the integer-like "1" first whatever the order.
    const keys = [...canonicalJson(input).matchAll(/"((?:[^"\\]|\\.)*)":"/g)].map((m) => JSON.parse(`"${m[1]}"`));
    expect(keys).toEqual(["\r", "1", "\u0080", "\u00f6", "\u20ac", "\ud83d\ude00", "\ufb33"]);
    // Code units, not code points: U+1F600 (D83D DE00) sorts before U+FB33 although it is the larger code point.
    expect(canonicalJson({ "\ufb33": 1, "\ud83d\ude00": 2 })).toBe('{"😀":2,"דּ":1}');
  });

  it.each([
    ["0000000000000000", "0"],
    ["8000000000000000", "0"],
    ["0000000000000001", "5e-324"],
    ["8000000000000001", "-5e-324"],
    ["7fefffffffffffff", "1.7976931348623157e+308"],
    ["ffefffffffffffff", "-1.7976931348623157e+308"],
    ["4340000000000000", "9007199254740992"],
    ["c340000000000000", "-9007199254740992"],
    ["4430000000000000", "295147905179352830000"],
    ["44b52d02c7e14af5", "9.999999999999997e+22"],
    ["44b52d02c7e14af6", "1e+23"],
    ["44b52d02c7e14af7", "1.0000000000000001e+23"],
    ["444b1ae4d6e2ef4e", "999999999999999700000"],
    ["444b1ae4d6e2ef4f", "999999999999999900000"],
    ["444b1ae4d6e2ef50", "1e+21"],
    ["3eb0c6f7a0b5ed8c", "9.999999999999997e-7"],
    ["3eb0c6f7a0b5ed8d", "0.000001"],
    ["41b3de4355555553", "333333333.3333332"],
    ["41b3de4355555554", "333333333.33333325"],
    ["41b3de4355555555", "333333333.3333333"],
    ["41b3de4355555556", "333333333.3333334"],
    ["41b3de4355555557", "333333333.33333343"],
    ["becbf647612f3696", "-0.0000033333333333333333"],
    ["43143ff3c1cb0959", "1424953923781206.2"],
  ])("writes the double %s as %s (Appendix B)", (hex, text) => {
    expect(canonicalJson(double(hex))).toBe(text);
  });

  it.each([["7fffffffffffffff"], ["7ff0000000000000"], ["fff0000000000000"]])(
    "refuses the double %s (NaN, Infinity: not JSON)",
    (hex) => {
      expect(() => canonicalJson({ a: [double(hex)] })).toThrow(CanonicalJsonError);
      expect(() => canonicalJson({ a: [double(hex)] })).toThrow(/^\$\.a\[0\]: /);
    },
  );

  it("escapes only what JSON must, in lower-case hex, and writes the rest literally", () => {
    expect(canonicalJson('\u0000\u0008\u0009\u000a\u000c\u000d\u001f\u007f\u2028\u2029é"\\/')).toBe(
      '"\\u0000\\b\\t\\n\\f\\r\\u001f\u007f\u2028\u2029é\\"\\\\/"',
    );
  });

  it("refuses lone surrogates (no UTF-8 form) but keeps a pair", () => {
    expect(() => canonicalJson("a\ud800")).toThrow(/lone surrogate/);
    expect(() => canonicalJson({ ["\udc00"]: 1 })).toThrow(/lone surrogate/);
    expect(canonicalJson("\ud83d\ude00")).toBe('"😀"');
  });

  it("leaves out undefined members, refuses what JSON has not, nests without whitespace", () => {
    expect(canonicalJson({ b: [1, { d: true, c: null }], a: undefined })).toBe('{"b":[1,{"c":null,"d":true}]}');
    expect(() => canonicalJson({ a: 1n })).toThrow(/bigint is not JSON/);
    expect(() => canonicalJson([undefined])).toThrow(/undefined is not JSON/);
    expect(canonicalJson({ at: new Date(0) })).toBe('{"at":"1970-01-01T00:00:00.000Z"}');
  });
});
