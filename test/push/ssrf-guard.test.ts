import { describe, expect, it } from "vitest";
import { WebhookGuard, type LookupAll } from "../../src/push/ssrf-guard";
import { A2AError } from "../../src/protocol/errors";

/** Fake DNS for names the test controls; anything else goes to the real resolver (e.g. "localhost"). */
const fakeDns: Record<string, string[]> = {
  "public.example": ["93.184.216.34"],
  "internal.example": ["10.1.2.3"],
  "dual.example": ["93.184.216.34", "192.168.0.10"],
  "v6-loop.example": ["::1"],
  "metadata.example": ["169.254.169.254"],
  "bench.example": ["198.18.0.7"],
  "docs.example": ["203.0.113.5"],
  "docs6.example": ["2001:db8::5"],
};
const lookup: LookupAll = async (host) => {
  const hit = fakeDns[host];
  if (hit) return hit.map((address) => ({ address, family: address.includes(":") ? 6 : 4 }));
  const { lookup: real } = await import("node:dns/promises");
  return real(host, { all: true, verbatim: true });
};

async function refusal(guard: WebhookGuard, url: string): Promise<A2AError | undefined> {
  try {
    await guard.check(url);
    return undefined;
  } catch (e) {
    return e as A2AError;
  }
}

describe("WebhookGuard", () => {
  const guard = new WebhookGuard({ lookup });

  it.each([
    ["http://127.0.0.1/hook", /loopback/],
    ["http://127.8.9.10:8080/", /loopback/],
    ["http://2130706433/", /loopback/], // 127.0.0.1 spelled as one number
    ["http://0x7f.1/", /loopback/],
    ["http://localhost:9000/admin", /resolves to .*loopback/],
    ["http://[::1]/", /loopback/],
    ["http://[::ffff:127.0.0.1]/", /IPv4-mapped form of a loopback/],
    ["http://[::ffff:169.254.169.254]/", /IPv4-mapped form of a link-local/],
    ["http://10.0.0.1/", /private/],
    ["http://172.16.0.1/", /private/],
    ["http://172.31.255.254/", /private/],
    ["http://192.168.1.1/", /private/],
    ["http://[fd12:3456::1]/", /unique local/],
    ["http://169.254.169.254/latest/meta-data/", /link-local.*metadata/],
    ["http://[fe80::1]/", /link-local/],
    ["http://100.64.0.1/", /carrier-grade NAT/],
    ["http://0.0.0.0:8080/", /unspecified/],
    ["http://[::]/", /unspecified/],
    ["http://224.0.0.1/", /multicast/],
    ["http://[ff02::1]/", /multicast/],
    ["http://[64:ff9b::a00:1]/", /NAT64 form of a private/],
    ["https://internal.example/hook", /'internal.example' resolves to 10\.1\.2\.3, which is a private/],
    ["https://metadata.example/", /link-local/],
    ["https://v6-loop.example/", /loopback/],
    ["https://dual.example/", /192\.168\.0\.10.*private/], // every address counts, not just the first
    ["http://192.0.0.9/", /IETF protocol assignment/],
    ["http://192.0.2.1/", /TEST-NET-1/],
    ["http://198.18.0.1/", /benchmarking/],
    ["http://198.51.100.1/", /TEST-NET-2/],
    ["http://203.0.113.1/", /TEST-NET-3/],
    ["http://192.88.99.1/", /6to4 relay/],
    ["http://255.255.255.255/", /limited broadcast/],
    ["http://[100::1]/", /discard-only/],
    ["http://[2001::1]/", /IETF protocol assignment/],
    ["http://[2001:db8::1]/", /documentation/],
    ["http://[3fff::1]/", /documentation/],
    ["http://[5f00::1]/", /SRv6/],
    ["http://[64:ff9b:1::1]/", /local-use IPv4\/IPv6 translation/],
    ["https://bench.example/", /'bench.example' resolves to 198\.18\.0\.7, which is a benchmarking/],
    ["https://docs.example/", /resolves to 203\.0\.113\.5, which is a documentation/],
    ["https://docs6.example/", /resolves to 2001:db8::5, which is a documentation/],
  ])("refuses %s", async (url, why) => {
    const err = await refusal(guard, url);
    expect(err).toBeInstanceOf(A2AError);
    expect(err!.code).toBe(-32602);
    expect(err!.reason).toBe("INVALID_PARAMS");
    expect(err!.message).toMatch(/^push notification URL refused: /);
    expect(err!.message).toMatch(why);
  });

  it.each([
    ["ftp://93.184.216.34/x", /scheme 'ftp'/],
    ["file:///etc/passwd", /scheme 'file'/],
    ["javascript:alert(1)", /scheme 'javascript'/],
    ["not a url", /not a valid URL/],
    ["https://user:pw@public.example/", /credentials in the URL/],
    ["https://does-not-exist.invalid/", /does not resolve/],
  ])("refuses %s", async (url, why) => {
    expect((await refusal(guard, url))?.message).toMatch(why);
  });

  it.each([
    "https://public.example/hook",
    "http://93.184.216.34:8080/",
    "https://[2606:4700:4700::1111]/",
    "http://172.32.0.1/",
    "http://100.128.0.1/",
    "http://[::ffff:8.8.8.8]/",
  ])("allows the public address %s", async (url) => {
    expect(await refusal(guard, url)).toBeUndefined();
  });

  it("allows an allowlisted host:port only on that port, and a bare allowlisted host on any port", async () => {
    const g = new WebhookGuard({ lookup, allowlist: ["127.0.0.1:8765", "LOCALHOST", "::1", "[fd00::5]:443"] });
    expect(await refusal(g, "http://127.0.0.1:8765/hook")).toBeUndefined();
    expect((await refusal(g, "http://127.0.0.1:8766/hook"))?.message).toMatch(/loopback/);
    expect(await refusal(g, "http://localhost:1234/")).toBeUndefined();
    expect(await refusal(g, "http://[::1]:9/")).toBeUndefined();
    expect(await refusal(g, "https://[fd00::5]/")).toBeUndefined(); // 443 is https's default port
    expect((await refusal(g, "http://[fd00::5]/"))?.message).toMatch(/unique local/);
    expect((await refusal(g, "http://10.0.0.1/"))?.message).toMatch(/private/);
  });

  it("allows a fleet peer's host, asking for the fleet's hosts at each check", async () => {
    const fleet = new Set(["10.0.0.7:8443"]);
    const g = new WebhookGuard({ lookup, fleetHosts: () => fleet });
    expect(await refusal(g, "https://10.0.0.7:8443/push")).toBeUndefined();
    expect((await refusal(g, "https://10.0.0.7:9999/push"))?.message).toMatch(/private/);
    expect((await refusal(g, "https://10.0.0.8:8443/push"))?.message).toMatch(/private/);
    fleet.add("beta.lan");
    fleet.delete("10.0.0.7:8443");
    expect(await refusal(g, "https://beta.lan:8443/")).toBeUndefined(); // not even resolved: the peer is trusted
    expect((await refusal(g, "https://10.0.0.7:8443/push"))?.message).toMatch(/private/);
  });

  it("refuses, quickly and clearly, a host whose DNS does not answer", async () => {
    const g = new WebhookGuard({ lookup: () => new Promise(() => {}), lookupTimeoutMs: 50 });
    const err = await refusal(g, "https://slow-dns.example/hook");
    expect(err).toBeInstanceOf(A2AError);
    expect(err!.code).toBe(-32602);
    expect(err!.message).toBe(
      "push notification URL refused: host 'slow-dns.example' did not resolve within 50 ms (DNS timeout)",
    );
    await expect(g.resolve("https://slow-dns.example/hook")).rejects.toThrow(/did not resolve within 50 ms/);
  });

  it("refuses a host the resolver says does not exist, naming the resolver's code", async () => {
    const g = new WebhookGuard({
      lookup: async () => Promise.reject(Object.assign(new Error("nope"), { code: "ENOTFOUND" })),
    });
    expect((await refusal(g, "https://gone.example/"))?.message).toBe(
      "push notification URL refused: host 'gone.example' does not resolve (ENOTFOUND)",
    );
    const empty = new WebhookGuard({ lookup: async () => [] });
    expect((await refusal(empty, "https://empty.example/"))?.message).toBe(
      "push notification URL refused: host 'empty.example' does not resolve",
    );
  });

  it("resolve() looks the name up once and returns the addresses it checked; a rebound answer is refused", async () => {
    const answers = [["93.184.216.34", "2606:2800:220:1::1"], ["127.0.0.1"]];
    const asked: string[] = [];
    const g = new WebhookGuard({
      lookup: async (host) => {
        asked.push(host);
        return answers.shift()!.map((address) => ({ address, family: address.includes(":") ? 6 : 4 }));
      },
    });
    const target = await g.resolve("https://rebind.example:8443/hook?x=1");
    expect(target.url.href).toBe("https://rebind.example:8443/hook?x=1");
    expect(target.addresses).toEqual(["93.184.216.34", "2606:2800:220:1::1"]);
    expect(asked).toEqual(["rebind.example"]);
    // The same name now answers loopback: the next resolve (the next delivery attempt) refuses it.
    await expect(g.resolve("https://rebind.example:8443/hook")).rejects.toThrow(
      /resolves to 127\.0\.0\.1, which is a loopback address/,
    );
    expect(asked).toEqual(["rebind.example", "rebind.example"]);
  });

  it("resolve() of an IP literal asks no resolver; of an allowed name it resolves without judging the addresses", async () => {
    const asked: string[] = [];
    const counting: LookupAll = async (host) => {
      asked.push(host);
      return [{ address: "127.0.0.1", family: 4 }];
    };
    const g = new WebhookGuard({ lookup: counting, allowlist: ["hooks.lan"] });
    expect(await g.resolve("http://8.8.8.8:8080/x")).toMatchObject({ addresses: ["8.8.8.8"] });
    expect(await g.resolve("http://[2606:4700:4700::1111]/x")).toMatchObject({ addresses: ["2606:4700:4700::1111"] });
    expect(asked).toEqual([]);
    await g.check("http://hooks.lan:9000/x"); // registration: an allowed host is not even looked up
    expect(asked).toEqual([]);
    expect((await g.resolve("http://hooks.lan:9000/x")).addresses).toEqual(["127.0.0.1"]); // delivery: it is
    expect(asked).toEqual(["hooks.lan"]);
    await expect(g.resolve("http://not-allowed.lan/x")).rejects.toThrow(/loopback/);
  });
});
