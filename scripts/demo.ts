/**
 * `npm run demo`: two nodes on this machine's loopback delegate a task, every step shown as the command a
 * person would type on two real machines. Uses temporary homes and removes them afterwards.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const root = join(import.meta.dir, "..");
const binary = join(root, "dist", "a2a-node");
const work = mkdtempSync(join(tmpdir(), "a2a-demo-"));
const alpha = join(work, "alpha");
const beta = join(work, "beta");
const servers: Bun.Subprocess[] = [];

function step(title: string) {
  console.log(`\n\x1b[1m== ${title}\x1b[0m`);
}

function sh(home: string, who: string, args: string[]): string {
  console.log(`\x1b[36m${who}$ a2a-node ${args.map((a) => (/\s/.test(a) ? JSON.stringify(a) : a)).join(" ")}\x1b[0m`);
  const r = Bun.spawnSync([binary, "--home", home, ...args], { stdio: ["ignore", "pipe", "pipe"] });
  const out = r.stdout.toString();
  process.stdout.write(out);
  process.stdout.write(r.stderr.toString());
  if (r.exitCode !== 0) throw new Error(`'a2a-node ${args[0]}' exited ${r.exitCode}`);
  return out;
}

async function serve(home: string, who: string, args: string[]): Promise<string> {
  console.log(`\x1b[36m${who}$ a2a-node serve ${args.join(" ")} &\x1b[0m`);
  // The node logs on stdout; text lines, since a person watches the demo.
  const p = Bun.spawn(
    [binary, "--home", home, "serve", "--host", "127.0.0.1", "--port", "0", "--log-format", "text", ...args],
    { stdio: ["ignore", "pipe", "inherit"] },
  );
  servers.push(p);
  let log = "";
  const reader = (p.stdout as ReadableStream<Uint8Array>).getReader();
  for (;;) {
    const { value, done } = await reader.read();
    if (done) throw new Error(`serve exited:\n${log}`);
    log += new TextDecoder().decode(value);
    const m = /listen=(https:\/\/\S+)/.exec(log);
    if (m) {
      process.stdout.write(log);
      // Keep showing what it logs (and keep its pipe drained).
      void (async () => {
        for (;;) {
          const next = await reader.read();
          if (next.done) return;
          process.stdout.write(next.value);
        }
      })();
      return m[1];
    }
  }
}

try {
  if (
    Bun.spawnSync([process.execPath, join(root, "scripts", "build.ts"), "--if-stale"], {
      stdio: ["inherit", "inherit", "inherit"],
    }).exitCode !== 0
  )
    throw new Error("build failed");
  step("On machine A (alpha): create the fleet CA and alpha's identity");
  sh(alpha, "alpha", ["init-pki", "--name", "alpha"]);
  step("Still on alpha: issue beta's identity as a bundle (copy it to beta privately)");
  const bundle = join(work, "beta.bundle");
  sh(alpha, "alpha", ["pki", "issue", "beta", "--out", bundle]);
  step("On machine B (beta): install the bundle, then serve (echo executor: answers with the task's text)");
  sh(beta, "beta", ["init-pki", "--bundle", bundle]);
  const betaUrl = await serve(beta, "beta", ["--executor", "echo"]);
  step("On alpha: register beta as a peer, then delegate a task and wait for the answer");
  sh(alpha, "alpha", ["peers", "add", "beta", betaUrl]);
  sh(alpha, "alpha", ["peers", "list"]);
  sh(alpha, "alpha", ["send", "--agent", "beta", "--task", "Hello from alpha: please echo this back.", "--wait"]);
  const line = sh(alpha, "alpha", ["send", "--agent", "beta", "--task", "A second task, fire and forget"]);
  const id = line.split("\t")[0];
  step("Check on the second task later, as JSON (for scripts)");
  sh(alpha, "alpha", ["status", "--agent", "beta", "--task-id", id, "--json"]);
  step(
    "Done: on every connection beta checked alpha's certificate against the fleet CA, and alpha checked that the server was beta.",
  );
} catch (err) {
  console.error(`demo failed: ${(err as Error).message}`);
  process.exitCode = 1;
} finally {
  for (const s of servers) s.kill("SIGTERM");
  await Promise.all(servers.map((s) => s.exited));
  rmSync(work, { recursive: true, force: true });
}
