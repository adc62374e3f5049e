import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createCa, issueLeaf, type CertAndKey } from "../../pki";
import { fetchPinned, pinnedRequest } from "../../src/push/pinned-fetch";
import { Receiver } from "../fakes/webhook-receiver";

// Names under .invalid never resolve (RFC 6761): a request that reaches a receiver through one of them went to
// the pinned address, not to a lookup of the name.
const HOST = "hooks.pinned.invalid";

let ca: CertAndKey;
let plain: Receiver;
let secure: Receiver;

beforeAll(async () => {
  ca = await createCa({ name: "pinned-fetch test CA" });
  const leaf = await issueLeaf({ ca, name: "hooks", sans: [HOST] }); // no IP SAN: 127.0.0.1 alone would not verify
  plain = new Receiver();
  secure = new Receiver({ tls: { cert: leaf.certPem, key: leaf.keyPem } });
});
afterAll(() => {
  plain.stop();
  secure.stop();
});

const post = (extra: Record<string, unknown> = {}): RequestInit => ({
  method: "POST",
  body: "{}",
  headers: { "Content-Type": "application/a2a+json" },
  ...extra,
});
const target = (url: string, ...addresses: string[]) => ({ url: new URL(url), addresses });

async function failure(p: Promise<unknown>): Promise<Error> {
  try {
    await p;
  } catch (e) {
    return e as Error;
  }
  throw new Error("expected a failure");
}

describe("fetchPinned", () => {
  it("connects to the given address while the request names the host (plain HTTP)", async () => {
    const res = await fetchPinned(target(`http://${HOST}:${plain.port}/hook?a=1`, "127.0.0.1"), post());
    expect(res.status).toBe(204);
    const got = plain.requests.at(-1)!;
    expect(got.headers.host).toBe(`${HOST}:${plain.port}`);
    expect(got.path).toBe("/hook");
    expect(got.headers["content-type"]).toBe("application/a2a+json");
  });

  it("over https sends the host name as SNI and verifies the certificate against that name", async () => {
    const res = await fetchPinned(target(secure.url("/tls", HOST), "127.0.0.1"), post({ tls: { ca: ca.certPem } }));
    expect(res.status).toBe(204);
    expect(secure.requests.at(-1)!.headers.host).toBe(`${HOST}:${secure.port}`);
    // Same address, a name the certificate does not cover: refused by verification, nothing is sent.
    const before = secure.requests.length;
    const err = await failure(
      fetchPinned(target(secure.url("/tls", "other.pinned.invalid"), "127.0.0.1"), post({ tls: { ca: ca.certPem } })),
    );
    expect(String((err as { code?: string }).code ?? err.message)).toMatch(/ALTNAME|altname|certificate/i);
    expect(err.message).toContain("(at 127.0.0.1)");
    expect(secure.requests.length).toBe(before);
  });

  it("tries the next address while connections are refused, and names every address when all are", async () => {
    // Nothing listens on 127.0.0.2 at this port (the receiver is bound to 127.0.0.1 only).
    const res = await fetchPinned(target(plain.url("/second", HOST), "127.0.0.2", "127.0.0.1"), post());
    expect(res.status).toBe(204);
    expect(plain.requests.at(-1)!.path).toBe("/second");
    const err = await failure(fetchPinned(target(plain.url("/none", HOST), "127.0.0.2", "127.0.0.3"), post()));
    expect(err.name).toBe("ConnectError");
    expect(err.message).toBe(
      `could not connect to ${HOST}:${plain.port} at 127.0.0.2 (ECONNREFUSED), 127.0.0.3 (ECONNREFUSED)`,
    );
  });

  it("does not try another address after a failure past the connection (the request may have been sent)", async () => {
    const hang = new Receiver();
    hang.hangNext();
    try {
      const err = await failure(
        fetchPinned(
          target(hang.url("/slow", HOST), "127.0.0.1", "127.0.0.1"),
          post({ signal: AbortSignal.timeout(100) }),
        ),
      );
      expect(err.name).toBe("TimeoutError");
      expect(err.message).toContain("(at 127.0.0.1)");
      expect(hang.requests).toHaveLength(1);
    } finally {
      hang.stop();
    }
  });
});

describe("pinnedRequest", () => {
  it("writes an IPv6 address in brackets and keeps port, path and query", () => {
    const [url, init] = pinnedRequest(
      new URL("https://hooks.example.com:8443/a/b?c=d"),
      "2606:4700:4700::1111",
      post(),
    );
    expect(url).toBe("https://[2606:4700:4700::1111]:8443/a/b?c=d");
    expect(new Headers(init.headers).get("host")).toBe("hooks.example.com:8443");
    expect((init as { tls?: { serverName?: string } }).tls?.serverName).toBe("hooks.example.com");
  });

  it("leaves an IP-literal URL as it is (no Host rewrite, no SNI)", () => {
    const init = post();
    expect(pinnedRequest(new URL("https://8.8.8.8/x"), "8.8.8.8", init)).toEqual(["https://8.8.8.8/x", init]);
    expect(pinnedRequest(new URL("http://[2606:4700:4700::1111]/x"), "2606:4700:4700::1111", init)[0]).toBe(
      "http://[2606:4700:4700::1111]/x",
    );
  });

  it("gives plain http no TLS settings, and keeps the caller's TLS settings beside the server name", () => {
    expect(
      (pinnedRequest(new URL("http://h.example/"), "8.8.8.8", post())[1] as { tls?: unknown }).tls,
    ).toBeUndefined();
    const [, init] = pinnedRequest(new URL("https://h.example/"), "8.8.8.8", post({ tls: { ca: "PEM" } }));
    expect((init as { tls?: unknown }).tls).toEqual({ ca: "PEM", serverName: "h.example" });
  });

  it("refuses an address a URL cannot carry instead of falling back to the name", () => {
    expect(() => pinnedRequest(new URL("http://h.example/"), "fe80::1%eth0", post())).toThrow(
      "cannot connect to address 'fe80::1%eth0'",
    );
  });
});
