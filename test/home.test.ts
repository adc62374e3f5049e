import { chownSync, mkdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { bufferIo } from "../src/cli/io";
import { runCli } from "../src/cli/registry";
import { homePaths, resolveHome, SYSTEM_HOME } from "../src/home";
import { tempDir } from "./helpers/temp-dir";

const tmp = tempDir("a2a-home-");

const machine = (isRoot: boolean, systemHomeExists: boolean) => ({
  isRoot,
  exists: (p: string) => p === SYSTEM_HOME && systemHomeExists,
});

describe("which home a command uses", () => {
  it("--home, then A2A_NODE_HOME, win over everything", () => {
    expect(resolveHome("rel/dir", { A2A_NODE_HOME: "/x" }, machine(true, true))).toBe(join(process.cwd(), "rel/dir"));
    expect(resolveHome(undefined, { A2A_NODE_HOME: "/x", HOME: SYSTEM_HOME }, machine(true, true))).toBe("/x");
  });

  it("root uses the system service's home once it exists, else its own ~/.a2a-node", () => {
    expect(resolveHome(undefined, { HOME: "/root" }, machine(true, true))).toBe(SYSTEM_HOME);
    expect(resolveHome(undefined, { HOME: "/root" }, machine(true, false))).toBe("/root/.a2a-node");
  });

  it("the service user, whose home directory is the state directory, uses it as it is", () => {
    expect(resolveHome(undefined, { HOME: SYSTEM_HOME }, machine(false, true))).toBe(SYSTEM_HOME);
    expect(resolveHome(undefined, { HOME: `${SYSTEM_HOME}/` }, machine(false, true))).toBe(SYSTEM_HOME);
  });

  it("anyone else keeps ~/.a2a-node, whether or not a system service exists", () => {
    expect(resolveHome(undefined, { HOME: "/home/ann" }, machine(false, true))).toBe("/home/ann/.a2a-node");
  });
});

describe.skipIf(process.getuid?.() !== 0)("root working in another user's home (run as root)", () => {
  it("init-pki hands the keys and certificates it makes to the home's owner, keys still 0600", async () => {
    const home = join(tmp, "service-home");
    mkdirSync(home, { mode: 0o700 });
    chownSync(home, 4242, 4243);
    const io = bufferIo();
    expect(await runCli(["--home", home, "init-pki", "--name", "beta"], io)).toBe(0);
    const p = homePaths(home);
    for (const path of [p.certsDir, p.secretsDir, p.nodeKey, p.caKey, p.nodeCert, p.caCert])
      expect([path, statSync(path).uid, statSync(path).gid]).toEqual([path, 4242, 4243]);
    expect(statSync(p.nodeKey).mode & 0o777).toBe(0o600);
  });

  it("peers add gives a database it creates to the home's owner", async () => {
    const home = join(tmp, "service-home-2");
    mkdirSync(home, { mode: 0o700 });
    chownSync(home, 4242, 4243);
    expect(await runCli(["--home", home, "peers", "add", "beta", "https://10.0.0.7:9443"], bufferIo())).toBe(0);
    expect(statSync(homePaths(home).database).uid).toBe(4242);
  });
});
