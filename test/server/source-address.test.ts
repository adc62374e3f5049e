import { describe, expect, it } from "vitest";
import { sourceOf } from "../../src/server/source-address";

describe("sourceOf: what per-source limits count a connection against", () => {
  it.each([
    ["10.0.0.7", "10.0.0.7"],
    ["127.0.0.1", "127.0.0.1"],
    // What a dual-stack listener reports for an IPv4 client is that client.
    ["::ffff:10.0.0.7", "10.0.0.7"],
    ["::FFFF:10.0.0.7", "10.0.0.7"],
    // An IPv6 address by its /64, however it is written.
    ["2001:db8:1:2::1", "2001:db8:1:2::/64"],
    ["2001:db8:1:2:ffff:ffff:ffff:ffff", "2001:db8:1:2::/64"],
    ["2001:0db8:0001:0002:0000:0000:0000:0001", "2001:db8:1:2::/64"],
    ["2001:db8::1", "2001:db8:0:0::/64"],
    ["2001:db8:0:0:1::", "2001:db8:0:0::/64"],
    ["::1", "0:0:0:0::/64"],
    ["fe80::1%eth0", "fe80:0:0:0::/64"],
    ["64:ff9b::10.0.0.7", "64:ff9b:0:0::/64"],
    [undefined, "unknown"],
    ["", "unknown"],
  ])("%s → %s", (remote, source) => {
    expect(sourceOf(remote)).toBe(source);
  });

  it("puts every address of one /64 in one source and the next /64 in another", () => {
    const sources = new Set(Array.from({ length: 200 }, (_, i) => sourceOf(`2001:db8:1::${(i + 1).toString(16)}`)));
    expect([...sources]).toEqual(["2001:db8:1:0::/64"]);
    expect(sourceOf("2001:db8:1:1::1")).not.toBe(sourceOf("2001:db8:1::1"));
  });
});
