import { describe, expect, it } from "vitest";
import {
  embeddedScalarSha256,
  OPENAPI_PAGE_CSP,
  openApiPage,
  SCALAR_PATH,
  SCALAR_SHA256,
  SCALAR_VERSION,
  scalarAsset,
} from "../../src/server/openapi-page";

describe("the API reference page", () => {
  it("embeds the pinned viewer, byte for byte (src/server/assets/scalar/standalone.js, see scripts/vendor-scalar.ts)", () => {
    expect(embeddedScalarSha256()).toBe(SCALAR_SHA256);
    expect(SCALAR_PATH).toBe(`/openapi/scalar-${SCALAR_VERSION}.js`);
  });

  it("names nothing outside the node: no http(s) URL at all, the viewer from the node itself", () => {
    const html = openApiPage("alpha: a2a-node API reference", "/openapi/json");
    expect(html).not.toMatch(/https?:\/\//);
    expect(html).not.toMatch(/\/\/[a-z0-9.-]+\.[a-z]{2,}/i); // nor a protocol-relative one
    expect(html).toContain(`<script src="${SCALAR_PATH}"></script>`);
    expect(html).toContain("&quot;url&quot;:&quot;/openapi/json&quot;");
    expect(html).toContain("&quot;withDefaultFonts&quot;:false");
    // No inline script to run: the configuration is data.
    expect(html).toMatch(/<script id="api-reference" type="application\/json" data-configuration="[^"]*"><\/script>/);
  });

  it("escapes what it puts in the page", () => {
    const html = openApiPage('<script>alert("x")</script>', "/openapi/json");
    expect(html).not.toContain("<script>alert");
    expect(html).toContain("&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;");
  });

  it("its policy lets the page load only from the node", () => {
    for (const directive of [
      "default-src 'none'",
      "script-src 'self'",
      "connect-src 'self'",
      "font-src 'self' data:",
      "frame-ancestors 'none'",
    ])
      expect(OPENAPI_PAGE_CSP).toContain(directive);
    expect(OPENAPI_PAGE_CSP).not.toMatch(/https?:|\*/);
  });

  it("serves the viewer gzipped to clients that take it, with a long cache (its URL has the version)", () => {
    const gz = scalarAsset("br, gzip");
    expect(gz.headers["content-encoding"]).toBe("gzip");
    expect(gz.headers["cache-control"]).toContain("immutable");
    const plain = scalarAsset(null);
    expect(plain.headers["content-encoding"]).toBeUndefined();
    expect(Bun.gunzipSync(gz.body as Uint8Array<ArrayBuffer>).length).toBe(Buffer.byteLength(plain.body as string));
    expect((gz.body as Uint8Array).length).toBeLessThan(Buffer.byteLength(plain.body as string) / 2);
  });
});
