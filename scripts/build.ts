/**
 * Builds the one binary: dist/a2a-node. Embeds the SQL migrations (checked fresh here) and the version, and
 * turns off autoloading of .env and bunfig.toml so a stray file in a working directory never changes what a
 * deployed node does.
 *   bun scripts/build.ts             build
 *   bun scripts/build.ts --if-stale  build only if a source file is newer than the binary (npm test, npm start)
 */
import { existsSync, readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import pkg from "../package.json" with { type: "json" };

const root = join(import.meta.dir, "..");
const out = join(root, "dist", "a2a-node");

function newestSource(): number {
  let newest = 0;
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const p = join(dir, entry.name);
      if (entry.isDirectory()) walk(p);
      else newest = Math.max(newest, statSync(p).mtimeMs);
    }
  };
  for (const dir of ["src", "pki"]) walk(join(root, dir));
  for (const f of ["package.json", "package-lock.json", "scripts/build.ts"])
    newest = Math.max(newest, statSync(join(root, f)).mtimeMs);
  return newest;
}

if (process.argv.includes("--if-stale") && existsSync(out) && statSync(out).mtimeMs >= newestSource()) process.exit(0);

const check = Bun.spawnSync([process.execPath, join(root, "scripts", "embed-migrations.ts"), "--check"], {
  stdio: ["inherit", "inherit", "inherit"],
});
if (check.exitCode !== 0) process.exit(1);

const started = performance.now();
const build = Bun.spawnSync(
  [
    process.execPath,
    "build",
    join(root, "src", "main.ts"),
    "--compile",
    // Bytecode halves start-up (parsing the bundle is most of it); it requires ESM output.
    "--bytecode",
    "--format=esm",
    "--minify-syntax",
    "--no-compile-autoload-dotenv",
    "--no-compile-autoload-bunfig",
    `--define=A2A_NODE_BUILD_VERSION=${JSON.stringify(pkg.version)}`,
    "--outfile",
    out,
  ],
  { cwd: root, stdio: ["inherit", "pipe", "inherit"] },
);
if (build.exitCode !== 0) {
  process.stdout.write(build.stdout);
  console.error("build failed");
  process.exit(build.exitCode ?? 1);
}
const mib = (statSync(out).size / 1024 / 1024).toFixed(1);
console.log(`built ${out} (${mib} MiB, v${pkg.version}) in ${Math.round(performance.now() - started)} ms`);
