import { createHash } from "node:crypto";
// Embedded in the binary at build time (a text import); see scripts/vendor-scalar.ts for where it comes from.
import scalarScript from "./assets/scalar/standalone.js" with { type: "text" };

/** The pinned API reference viewer (@scalar/api-reference's standalone browser build) and its file's hash. */
export const SCALAR_VERSION = "1.72.1";
export const SCALAR_SHA256 = "bf091006bdc3af6067af77c2f534812e3e633e94a94e87138069f570f33b762c";
/** Where the page loads the viewer from: this node, under a name that changes with the version. */
export const SCALAR_PATH = `/openapi/scalar-${SCALAR_VERSION}.js`;

/**
 * Nothing on the page may come from elsewhere: a node on a private network has no CDN, and an operator's
 * browser must not call out from a page of the node's. The viewer's extras that would (its hosted fonts,
 * telemetry, its agent and MCP integrations) are turned off in its configuration, and this policy blocks
 * anything left. (Checked in headless Chromium with no network: the page renders, from the node alone.)
 */
export const OPENAPI_PAGE_CSP =
  "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; font-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

const HTML_ATTRIBUTE = /[&"<>]/g;
const ESCAPES: Record<string, string> = { "&": "&amp;", '"': "&quot;", "<": "&lt;", ">": "&gt;" };

/**
 * The API reference page: the OpenAPI description (served at `specPath`) rendered by the viewer the node
 * serves itself. The configuration rides in a data attribute (no inline script, so the policy needs none).
 */
export function openApiPage(title: string, specPath: string): string {
  const configuration = JSON.stringify({
    url: specPath,
    withDefaultFonts: false,
    hideClientButton: true,
    telemetry: false,
    showDeveloperTools: "never",
    agent: { disabled: true },
    mcp: { disabled: true },
  }).replace(HTML_ATTRIBUTE, (c) => ESCAPES[c]);
  const safeTitle = title.replace(HTML_ATTRIBUTE, (c) => ESCAPES[c]);
  return `<!doctype html>
<html lang="en">
  <head>
    <meta charset="utf-8" />
    <meta name="viewport" content="width=device-width, initial-scale=1" />
    <title>${safeTitle}</title>
  </head>
  <body>
    <script id="api-reference" type="application/json" data-configuration="${configuration}"></script>
    <script src="${SCALAR_PATH}"></script>
  </body>
</html>
`;
}

let gzipped: Uint8Array | undefined;

/** The viewer's script, gzipped when the client takes it (4 MiB becomes about 1 MiB), made once. */
export function scalarAsset(acceptEncoding: string | null): {
  body: string | Uint8Array;
  headers: Record<string, string>;
} {
  const headers: Record<string, string> = {
    "content-type": "text/javascript; charset=utf-8",
    // The name carries the version: a new version is a new URL, so this one never changes.
    "cache-control": "public, max-age=31536000, immutable",
    vary: "accept-encoding",
  };
  if (acceptEncoding && /\bgzip\b/i.test(acceptEncoding)) {
    // Bun.gzipSync, not node:zlib: importing node:zlib loads Node's stream machinery at every start of the binary.
    gzipped ??= Bun.gzipSync(scalarScript);
    return { body: gzipped, headers: { ...headers, "content-encoding": "gzip" } };
  }
  return { body: scalarScript, headers };
}

/** The embedded script's SHA-256, to prove it is the pinned file (test/server/openapi-page.test.ts). */
export function embeddedScalarSha256(): string {
  return createHash("sha256").update(scalarScript).digest("hex");
}
