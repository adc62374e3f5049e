import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { ProtocolError } from "../../src/client/peer-client";
import {
  outsideFetch,
  PeerAuthRefused,
  PeerCaError,
  PeerCredentialsError,
  readCredentialHeader,
  trustRoots,
} from "../../src/client/outside-fetch";
import { isLoopbackHost, normalizeOutsideUrl, PeerUrlError } from "../../src/client/peer-url";
import { tempDir } from "../helpers/temp-dir";

let dir: string;
beforeAll(() => {
  dir = tempDir("a2a-outside-unit-");
});

const file = (name: string, text: string) => {
  const p = join(dir, name);
  writeFileSync(p, text, { mode: 0o600 });
  return p;
};

describe("readCredentialHeader", () => {
  it("reads a bearer token (one line, trailing newline and spaces ignored) and a 'Name: value' header", () => {
    expect(readCredentialHeader({ kind: "bearer", file: file("t", "  abc.def-123  \n") })).toEqual({
      name: "Authorization",
      value: "Bearer abc.def-123",
    });
    expect(readCredentialHeader({ kind: "header", file: file("h", "X-Api-Key:   k 1 \n\n") })).toEqual({
      name: "X-Api-Key",
      value: "k 1",
    });
  });

  it("refuses what is not one token or one header line, naming the file and never its content", () => {
    const cases: [Parameters<typeof readCredentialHeader>[0], RegExp][] = [
      [{ kind: "bearer", file: file("empty", "\n") }, /must hold one token on one line/],
      [{ kind: "bearer", file: file("two", "secret-one\nsecret-two\n") }, /holds 2 non-empty lines/],
      [{ kind: "bearer", file: file("spaced", "secret with space\n") }, /without spaces/],
      [{ kind: "header", file: file("noname", ": secret-v\n") }, /one 'Name: value' line/],
      [{ kind: "header", file: file("novalue", "X-Key:\n") }, /one 'Name: value' line/],
      [{ kind: "bearer", file: join(dir, "missing") }, /cannot read the token file .*missing: it does not exist/],
      [{ kind: "header", file: dir }, /cannot read the header file .*: it is a directory/],
    ];
    for (const [auth, message] of cases) {
      let err: unknown;
      try {
        readCredentialHeader(auth);
      } catch (e) {
        err = e;
      }
      expect(err, auth.file).toBeInstanceOf(PeerCredentialsError);
      expect((err as Error).message).toMatch(message);
      expect((err as Error).message).not.toMatch(/secret/);
    }
  });
});

describe("trustRoots", () => {
  it("uses the system store, or only the --ca file, and says when that file is no PEM", () => {
    expect(trustRoots({ kind: "system" }).length).toBeGreaterThan(0);
    const pem = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";
    expect(trustRoots({ kind: "ca", caFile: file("ca.pem", pem) })).toEqual([pem]);
    expect(() => trustRoots({ kind: "ca", caFile: file("bad.pem", "hello") })).toThrow(PeerCaError);
    expect(() => trustRoots({ kind: "ca", caFile: join(dir, "none.pem") })).toThrow(/cannot read the CA file/);
  });
});

describe("normalizeOutsideUrl", () => {
  it("keeps the URL as published; plain HTTP only to loopback unless allowed", () => {
    expect(normalizeOutsideUrl("https://agent.example.com/a2a/").url).toBe("https://agent.example.com/a2a");
    expect(normalizeOutsideUrl("https://agent.example.com:443").url).toBe("https://agent.example.com");
    expect(normalizeOutsideUrl("http://127.0.0.1:8000").url).toBe("http://127.0.0.1:8000");
    expect(normalizeOutsideUrl("http://[::1]:8000/x").url).toBe("http://[::1]:8000/x");
    expect(normalizeOutsideUrl("http://10.0.0.2:8000", { insecureHttp: true }).url).toBe("http://10.0.0.2:8000");
    for (const bad of ["http://10.0.0.2:8000", "agent.example.com", "ftp://x/", "https://u:p@x/", "https://x/?a=1"])
      expect(() => normalizeOutsideUrl(bad), bad).toThrow(PeerUrlError);
    expect(isLoopbackHost("127.9.9.9")).toBe(true);
    expect(isLoopbackHost("127.0.0.1.evil.example")).toBe(false);
  });
});

describe("outsideFetch", () => {
  let server: ReturnType<typeof Bun.serve>;
  const seen: (string | null)[] = [];
  beforeAll(() => {
    server = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      fetch(req) {
        seen.push(req.headers.get("authorization"));
        const path = new URL(req.url).pathname;
        if (path === "/redirect")
          return new Response(null, { status: 302, headers: { location: "http://elsewhere.example/" } });
        if (path === "/forbidden") return new Response("no", { status: 403 });
        if (req.headers.get("authorization") !== "Bearer good")
          return new Response("no", { status: 401, headers: { "www-authenticate": "Bearer" } });
        return Response.json({ ok: true });
      },
    });
  });
  afterAll(() => server.stop(true));

  it("sends the token read at each call, turns 401/403 into PeerAuthRefused and refuses to follow redirects", async () => {
    const tokenFile = file("rotating", "good\n");
    const f = outsideFetch({ trust: { kind: "system" }, auth: { kind: "bearer", file: tokenFile } });
    const base = `http://127.0.0.1:${server.port}`;
    expect((await f(`${base}/`, {})).status).toBe(200);
    writeFileSync(tokenFile, "rotated\n");
    const refused = await f(`${base}/`, {}).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(PeerAuthRefused);
    expect((refused as PeerAuthRefused).status).toBe(401);
    expect((refused as Error).message).toBe("answered HTTP 401 (it asks for Bearer)");
    expect(seen.slice(-2)).toEqual(["Bearer good", "Bearer rotated"]);
    expect(((await f(`${base}/forbidden`, {}).catch((e: unknown) => e)) as PeerAuthRefused).status).toBe(403);
    const redirected = await f(`${base}/redirect`, {}).catch((e: unknown) => e);
    expect(redirected).toBeInstanceOf(ProtocolError);
    expect((redirected as Error).message).toContain(
      "a redirect to http://elsewhere.example/; redirects are not followed with credentials",
    );
  });
});
