import { describe, expect, it } from "vitest";
import { blockedReason } from "../../src/push/special-addresses";

// Each block of the IANA special-purpose registries (and the multicast/reserved space) at its first and last
// address, then the neighbours just outside it, which are public and must stay allowed.
describe("blockedReason: IPv4", () => {
  it.each([
    ["0.0.0.0", /unspecified\/'this network'/],
    ["0.255.255.255", /unspecified\/'this network'/],
    ["10.0.0.0", /private address \(10\.0\.0\.0\/8\)/],
    ["10.255.255.255", /private/],
    ["100.64.0.0", /carrier-grade NAT/],
    ["100.127.255.255", /carrier-grade NAT/],
    ["127.0.0.1", /loopback/],
    ["127.255.255.254", /loopback/],
    ["169.254.0.0", /link-local/],
    ["169.254.169.254", /link-local.*metadata/],
    ["172.16.0.0", /private address \(172\.16\.0\.0\/12\)/],
    ["172.31.255.255", /private/],
    ["192.0.0.0", /IETF protocol assignment \(192\.0\.0\.0\/24\)/],
    ["192.0.0.8", /IETF protocol assignment/], // IPv4 dummy address
    ["192.0.0.9", /IETF protocol assignment/], // PCP anycast: in the block, refused with it
    ["192.0.0.170", /IETF protocol assignment/], // NAT64/DNS64 discovery
    ["192.0.0.255", /IETF protocol assignment/],
    ["192.0.2.0", /documentation address \(TEST-NET-1/],
    ["192.0.2.255", /TEST-NET-1/],
    ["192.88.99.0", /deprecated 6to4 relay anycast/],
    ["192.88.99.255", /6to4 relay/],
    ["192.168.0.0", /private address \(192\.168\.0\.0\/16\)/],
    ["192.168.255.255", /private/],
    ["198.18.0.0", /benchmarking address \(198\.18\.0\.0\/15\)/],
    ["198.19.255.255", /benchmarking/],
    ["198.51.100.0", /TEST-NET-2/],
    ["198.51.100.255", /TEST-NET-2/],
    ["203.0.113.0", /TEST-NET-3/],
    ["203.0.113.255", /TEST-NET-3/],
    ["224.0.0.0", /multicast/],
    ["233.252.0.1", /multicast/], // MCAST-TEST-NET
    ["239.255.255.255", /multicast/],
    ["240.0.0.0", /reserved address \(240\.0\.0\.0\/4\)/],
    ["255.255.255.254", /reserved/],
    ["255.255.255.255", /limited broadcast/],
  ])("refuses %s", (ip, why) => {
    expect(blockedReason(ip)).toMatch(why);
  });

  it.each([
    "1.0.0.0",
    "9.255.255.255",
    "11.0.0.0",
    "100.63.255.255",
    "100.128.0.0",
    "126.255.255.255",
    "128.0.0.0",
    "169.253.255.255",
    "169.255.0.0",
    "172.15.255.255",
    "172.32.0.0",
    "191.255.255.255",
    "192.0.1.0",
    "192.0.1.255",
    "192.0.3.0",
    "192.31.196.1", // AS112-v4: globally reachable
    "192.52.193.1", // AMT: globally reachable
    "192.88.98.255",
    "192.88.100.0",
    "192.167.255.255",
    "192.169.0.0",
    "192.175.48.1", // direct delegation AS112: globally reachable
    "198.17.255.255",
    "198.20.0.0",
    "198.51.99.255",
    "198.51.101.0",
    "203.0.112.255",
    "203.0.114.0",
    "223.255.255.255",
    "8.8.8.8",
  ])("allows the public address %s", (ip) => {
    expect(blockedReason(ip)).toBeUndefined();
  });
});

describe("blockedReason: IPv6", () => {
  it.each([
    ["::", /unspecified/],
    ["::1", /loopback/],
    ["::ffff:127.0.0.1", /IPv4-mapped form of a loopback/],
    ["::ffff:198.18.0.1", /IPv4-mapped form of a benchmarking/],
    ["::ffff:c000:0201", /IPv4-mapped form of a documentation address \(TEST-NET-1/], // 192.0.2.1 in hex
    ["::127.0.0.1", /IPv4-compatible form of a loopback/],
    ["::8.8.8.8", /deprecated IPv4-compatible address/],
    ["64:ff9b::a00:1", /NAT64 form of a private/],
    ["64:ff9b::192.0.0.1", /NAT64 form of an IETF protocol assignment/],
    ["64:ff9b:1::", /local-use IPv4\/IPv6 translation address \(64:ff9b:1::\/48\)/],
    ["64:ff9b:1:ffff:ffff:ffff:ffff:ffff", /local-use IPv4\/IPv6 translation/],
    ["100::", /discard-only address \(100::\/64\)/],
    ["100::ffff:ffff:ffff:ffff", /discard-only/],
    ["100:0:0:1::1", /dummy address \(100:0:0:1::\/64\)/],
    ["2001::", /IETF protocol assignment \(2001::\/23\)/], // Teredo
    ["2001:0:4136:e378:8000:63bf:3fff:fdd2", /IETF protocol assignment/], // a Teredo address
    ["2001:1::1", /IETF protocol assignment/], // PCP anycast: in the block, refused with it
    ["2001:2::1", /IETF protocol assignment/], // benchmarking
    ["2001:20::1", /IETF protocol assignment/], // ORCHIDv2
    ["2001:1ff:ffff:ffff:ffff:ffff:ffff:ffff", /IETF protocol assignment/],
    ["2001:db8::", /documentation address \(2001:db8::\/32\)/],
    ["2001:db8:ffff:ffff:ffff:ffff:ffff:ffff", /documentation address \(2001:db8/],
    ["2002:c612:1::1", /6to4 form of a benchmarking/], // 2002:c612:0001 embeds 198.18.0.1
    ["2002:a9fe:a9fe::1", /6to4 form of a link-local/],
    ["3fff::", /documentation address \(3fff::\/20\)/],
    ["3fff:fff:ffff:ffff:ffff:ffff:ffff:ffff", /documentation address \(3fff/],
    ["5f00::", /segment-routing \(SRv6\) SID \(5f00::\/16\)/],
    ["5f00:ffff:ffff:ffff:ffff:ffff:ffff:ffff", /SRv6/],
    ["fc00::1", /unique local/],
    ["fdff:ffff::1", /unique local/],
    ["fe80::1", /link-local/],
    ["fe80::1%eth0", /link-local/],
    ["febf:ffff::1", /link-local/],
    ["fec0::1", /site-local/],
    ["ff02::1", /multicast/],
    ["ff0e::1", /multicast/],
    ["100:0:0:2::1", /outside the IPv6 global unicast space/], // reserved ::/8 beyond the named blocks
    ["1fff:ffff::1", /outside the IPv6 global unicast space/],
    ["4000::1", /outside the IPv6 global unicast space/],
    ["5eff::1", /outside the IPv6 global unicast space/],
    ["fe00::1", /outside the IPv6 global unicast space/],
  ])("refuses %s", (ip, why) => {
    expect(blockedReason(ip)).toMatch(why);
  });

  it.each([
    "2000::1",
    "2001:200::1", // first address past 2001::/23
    "2001:db7:ffff:ffff:ffff:ffff:ffff:ffff",
    "2001:db9::1",
    "2002:808:808::1", // 6to4 of 8.8.8.8
    "2606:4700:4700::1111",
    "2620:4f:8000::1", // direct delegation AS112: globally reachable
    "3ffe:ffff::1",
    "3fff:1000::1", // first address past 3fff::/20
    "64:ff9b::8.8.8.8", // well-known NAT64 prefix around a public address
    "::ffff:8.8.8.8",
  ])("allows the public address %s", (ip) => {
    expect(blockedReason(ip)).toBeUndefined();
  });
});

describe("blockedReason: not an address", () => {
  it.each(["example.com", "", "1.2.3", "::g"])("%j is not an IP address", (s) => {
    expect(blockedReason(s)).toBe("not an IP address");
  });
});
