/**
 * `npm start`: the node's main job on this machine with embedded defaults. Builds the binary if it is
 * missing or stale, gives the home an identity if it has none (init-pki with this machine's host name),
 * then runs `a2a-node serve`, passing along any arguments: `npm start -- --executor echo --port 9443`.
 */
import { existsSync } from "node:fs";
import { hostname } from "node:os";
import { join } from "node:path";
import { homePaths, resolveHome } from "../src/home";

const root = join(import.meta.dir, "..");
const binary = join(root, "dist", "a2a-node");
const run = (cmd: string[]) => Bun.spawnSync(cmd, { stdio: ["inherit", "inherit", "inherit"] }).exitCode ?? 1;

if (run([process.execPath, join(root, "scripts", "build.ts"), "--if-stale"]) !== 0) process.exit(1);

const home = resolveHome(undefined, process.env);
if (!existsSync(homePaths(home).nodeCert)) {
  // A node name is a DNS label; derive one from the host name.
  const name =
    hostname()
      .toLowerCase()
      .split(".")[0]
      .replace(/[^a-z0-9-]/g, "-")
      .replace(/^-+|-+$/g, "")
      .slice(0, 63) || "node";
  console.log(`a2a-node: no identity in ${home} yet; creating one named '${name}'`);
  if (run([binary, "--home", home, "init-pki", "--name", name]) !== 0) process.exit(1);
}

const serve = Bun.spawn([binary, "--home", home, "serve", ...process.argv.slice(2)], {
  stdio: ["inherit", "inherit", "inherit"],
});
// Whatever signal reaches this wrapper (kill of `npm start`: the npm script execs us, so npm's forwarded
// SIGTERM lands here) goes to the node; SIGHUP reloads it.
for (const sig of ["SIGINT", "SIGTERM", "SIGHUP"] as const) process.on(sig, () => serve.kill(sig));
// If whoever started us dies without a signal (npm killed with SIGKILL), we are re-parented: stop the node
// rather than leave it serving with nobody to stop it. There is no event for this, so look once a second.
const parent = process.ppid;
setInterval(() => {
  if (process.ppid !== parent) serve.kill("SIGTERM");
}, 1000).unref();
process.exit(await serve.exited);
