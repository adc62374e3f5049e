/**
 * Refreshes src/server/assets/scalar/standalone.js, the API reference page's script that GET /openapi serves from the
 * binary (so the page works offline, with nothing fetched from a CDN): takes the pinned version's package from
 * the npm registry with `npm pack`, copies dist/browser/standalone.js, and prints its SHA-256 for
 * src/server/openapi-page.ts. Dependencies of the package are not installed: the standalone file bundles them.
 *   bun scripts/vendor-scalar.ts 1.72.1
 */
import { copyFileSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createHash } from "node:crypto";

const version = process.argv[2];
if (!version || !/^\d+\.\d+\.\d+$/.test(version)) {
  console.error("usage: bun scripts/vendor-scalar.ts VERSION (an exact version, e.g. 1.72.1)");
  process.exit(2);
}
const dir = mkdtempSync(join(tmpdir(), "scalar-"));
try {
  const pack = Bun.spawnSync(["npm", "pack", `@scalar/api-reference@${version}`], {
    cwd: dir,
    stdio: ["ignore", "pipe", "inherit"],
  });
  if (pack.exitCode !== 0) throw new Error("npm pack failed");
  const tgz = pack.stdout.toString().trim().split("\n").pop() as string;
  if (Bun.spawnSync(["tar", "xzf", tgz], { cwd: dir }).exitCode !== 0) throw new Error(`could not unpack ${tgz}`);
  const out = join(import.meta.dir, "..", "src", "server", "assets", "scalar", "standalone.js");
  copyFileSync(join(dir, "package", "dist", "browser", "standalone.js"), out);
  const sha = createHash("sha256").update(readFileSync(out)).digest("hex");
  console.log(
    `wrote ${out} (@scalar/api-reference ${version})\nset SCALAR_VERSION = "${version}" and SCALAR_SHA256 = "${sha}" in src/server/openapi-page.ts`,
  );
} finally {
  rmSync(dir, { recursive: true, force: true });
}
