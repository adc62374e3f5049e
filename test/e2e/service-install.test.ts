/**
 * `a2a-node service install|uninstall|status` run by the compiled binary, as a person would, into temporary
 * roots and homes: real files, real owners and modes, real certificates. systemctl, useradd and loginctl are
 * recording fakes first on PATH (useradd writes ROOT/etc/passwd, as the real one does with --root).
 */
import { chmodSync, existsSync, mkdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { createServer } from "node:net";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { inspectCert, issueBundle, loadNodeIdentity } from "../../pki";
import { homePaths } from "../../src/home";
import { DEFAULT_SYSTEM_UNIT, renderUnit } from "../../src/service/unit";
import { requireBinary, serveBinary } from "../helpers/binary";
import { makeFleet, type Fleet } from "../helpers/fleet";
import { tempDir } from "../helpers/temp-dir";

const FAKE = `#!/bin/bash
name=$(basename "$0")
{ printf '%s' "$name"; printf ' %s' "$@"; printf '\\n'; } >> "$FAKE_LOG"
if [[ $name == useradd ]]; then
  root=/; [[ $1 == --root ]] && root=$2
  mkdir -p "$root/etc"
  echo "\${@: -1}:x:4242:4243:a2a-node service:/var/lib/a2a-node:/usr/sbin/nologin" >> "$root/etc/passwd"
fi
if [[ $name == systemctl && " $* " == *" show "* ]]; then printf '%b' "$FAKE_SHOW"; fi
if [[ $name == systemctl && " $* " == *" is-system-running "* && -n $FAKE_OFFLINE ]]; then echo offline; exit 1; fi
if [[ $name == systemctl && " $* " == *" restart "* && -n $FAKE_RESTART_FAILS ]]; then
  echo "Job for a2a-node.service failed because the control process exited with error code." >&2; exit 1
fi
exit 0
`;

let tmp: string;
let fleet: Fleet;
beforeAll(async () => {
  requireBinary();
  tmp = tempDir("a2a-service-");
  fleet = await makeFleet(["alpha"]);
});
afterAll(() => {
  fleet.cleanup();
});

let n = 0;
/** A fresh sandbox: a bin folder of fakes (those named), a log of their calls, a root, a HOME. */
function sandbox(fakes = ["systemctl", "useradd", "loginctl"]) {
  const dir = join(tmp, `s${++n}`);
  const bin = join(dir, "bin");
  mkdirSync(bin, { recursive: true });
  writeFileSync(join(bin, "fake"), FAKE, { mode: 0o755 });
  for (const f of fakes) symlinkSync("fake", join(bin, f));
  const log = join(dir, "calls.log");
  writeFileSync(log, "");
  const root = join(dir, "root");
  const home = join(dir, "home");
  mkdirSync(home);
  return {
    dir,
    root,
    home,
    calls: () => readFileSync(log, "utf8").split("\n").filter(Boolean),
    async run(args: string[], extraEnv: Record<string, string> = {}, opts: { asNobody?: boolean; path?: string } = {}) {
      const cmd = [requireBinary(), ...args];
      // Not root: the same binary, run as nobody (the suite runs as root on CI).
      if (opts.asNobody && process.getuid?.() === 0)
        cmd.unshift("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups");
      const proc = Bun.spawn(cmd, {
        env: { PATH: opts.path ?? `${bin}:/usr/bin:/bin`, HOME: home, USER: "ann", FAKE_LOG: log, ...extraEnv },
        cwd: dir,
        stdout: "pipe",
        stderr: "pipe",
      });
      const [stdout, stderr, code] = await Promise.all([
        new Response(proc.stdout).text(),
        new Response(proc.stderr).text(),
        proc.exited,
      ]);
      return { code, stdout, stderr };
    },
  };
}

const mode = (p: string) => statSync(p).mode & 0o777;
const owner = (p: string) => `${statSync(p).uid}:${statSync(p).gid}`;

describe("service install (system, into an image root)", () => {
  it("creates the user, the 0700 state directory as home, the identity the user can read, the binary and the unit; enables it offline", async () => {
    const s = sandbox();
    const r = await s.run(["service", "install", "--root", s.root, "--name", "beta", "--san", "10.0.0.7"]);
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("created system user a2a-node (uid 4242)");
    expect(r.stdout).toContain("created home /var/lib/a2a-node (0700, owned by a2a-node)");
    expect(r.stdout).toContain('created fleet CA and identity: node "beta"');
    expect(r.stdout).toContain(`enabled a2a-node.service in ${s.root} (not started: no systemd runs that root)`);
    expect(s.calls()).toEqual([
      `useradd --root ${s.root} --system --user-group --home-dir /var/lib/a2a-node --no-create-home --shell /usr/sbin/nologin --comment a2a-node service a2a-node`,
      `systemctl --root ${s.root} enable a2a-node.service`,
    ]);

    const home = join(s.root, "var/lib/a2a-node");
    const paths = homePaths(home);
    expect([mode(home), owner(home)]).toEqual([0o700, "4242:4243"]);
    expect([mode(join(s.root, "var/lib")), owner(join(s.root, "var/lib"))]).toEqual([0o755, "0:0"]);
    for (const key of [paths.nodeKey, paths.caKey])
      expect([key, mode(key), owner(key)]).toEqual([key, 0o600, "4242:4243"]);
    for (const dir of [paths.secretsDir, paths.certsDir])
      expect([dir, mode(dir), owner(dir)]).toEqual([dir, 0o700, "4242:4243"]);
    expect(owner(paths.nodeCert)).toBe("4242:4243");
    const id = await loadNodeIdentity(paths);
    expect(id.name).toBe("beta");
    expect(id.sans).toContain("10.0.0.7");

    const unit = join(s.root, "etc/systemd/system/a2a-node.service");
    expect(readFileSync(unit, "utf8")).toBe(renderUnit(DEFAULT_SYSTEM_UNIT));
    expect(mode(unit)).toBe(0o644);
    const bin = join(s.root, "usr/local/bin/a2a-node");
    expect(mode(bin)).toBe(0o755);
    expect(statSync(bin).size).toBe(statSync(requireBinary()).size);
  });

  it("installs a bundle: a root-only 0600 bundle becomes the service user's 0600 key", async () => {
    const s = sandbox();
    const bundle = join(s.dir, "gamma.bundle");
    await issueBundle(homePaths(fleet.homes.alpha), { name: "gamma", out: bundle });
    expect([mode(bundle), owner(bundle)]).toEqual([0o600, "0:0"]);
    const r = await s.run(["service", "install", "--root", s.root, "--bundle", "gamma.bundle", "--no-start"]);
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(`installed identity from ${bundle}: node "gamma"`);
    expect(r.stdout).toContain(`delete ${bundle} now`);
    const paths = homePaths(join(s.root, "var/lib/a2a-node"));
    expect([mode(paths.nodeKey), owner(paths.nodeKey)]).toEqual([0o600, "4242:4243"]);
    expect(existsSync(paths.caKey)).toBe(false);
    expect(readFileSync(paths.caCert, "utf8")).toBe(readFileSync(homePaths(fleet.homes.alpha).caCert, "utf8"));
    expect(inspectCert(readFileSync(paths.nodeCert, "utf8")).subjectCn).toBe("gamma");
  });

  it("runs again as an update: the user and identity are kept, an unchanged unit is left alone; another identity is refused", async () => {
    const s = sandbox();
    expect((await s.run(["service", "install", "--root", s.root, "--name", "beta"])).code).toBe(0);
    const key = readFileSync(homePaths(join(s.root, "var/lib/a2a-node")).nodeKey, "utf8");
    const again = await s.run(["service", "install", "--root", s.root]);
    expect(again.code).toBe(0);
    expect(again.stdout).toContain("using system user a2a-node (uid 4242)");
    expect(again.stdout).toContain('kept the identity already there: node "beta"');
    expect(again.stdout).toContain("unchanged: /etc/systemd/system/a2a-node.service");
    expect(s.calls().filter((c) => c.startsWith("useradd"))).toHaveLength(1);

    const other = await s.run(["service", "install", "--root", s.root, "--name", "delta"]);
    expect(other.code).toBe(1);
    expect(other.stderr).toMatch(/already holds the identity of node "beta" .*it is never replaced/);
    expect(other.stderr).toContain(
      "next: run without --name/--bundle to keep it, or remove the service and its home first: a2a-node service uninstall --purge",
    );
    expect(readFileSync(homePaths(join(s.root, "var/lib/a2a-node")).nodeKey, "utf8")).toBe(key);
  });

  it("uninstall disables and removes the unit and keeps the home; --purge then deletes the home", async () => {
    const s = sandbox();
    expect((await s.run(["service", "install", "--root", s.root, "--name", "beta"])).code).toBe(0);
    const u = await s.run(["service", "uninstall", "--root", s.root]);
    expect(u.code).toBe(0);
    expect(u.stdout).toContain("removed /etc/systemd/system/a2a-node.service");
    expect(u.stdout).toContain("kept /var/lib/a2a-node (identity and tasks; --purge deletes it)");
    expect(s.calls().at(-1)).toBe(`systemctl --root ${s.root} disable a2a-node.service`);
    expect(existsSync(join(s.root, "etc/systemd/system/a2a-node.service"))).toBe(false);
    expect(existsSync(join(s.root, "var/lib/a2a-node/secrets/node.key"))).toBe(true);

    const p = await s.run(["service", "uninstall", "--root", s.root, "--purge", "--json"]);
    expect(p.code).toBe(0);
    expect(JSON.parse(p.stdout)).toEqual({
      scope: "system",
      unitPath: "/etc/systemd/system/a2a-node.service",
      removedUnit: false,
      purgedHome: "/var/lib/a2a-node",
    });
    expect(existsSync(join(s.root, "var/lib/a2a-node"))).toBe(false);

    const none = await s.run(["service", "uninstall", "--root", s.root]);
    expect(none.code).toBe(3);
    expect(none.stderr).toContain("no a2a-node system service is installed (no /etc/systemd/system/a2a-node.service)");
  });
});

describe("service install (user service, live)", () => {
  it("writes the unit under ~/.config/systemd/user, reloads, enables, starts and turns lingering on", async () => {
    const s = sandbox();
    const nodeHome = join(s.home, ".a2a-node");
    const r = await s.run(["service", "install", "--user", "--name", "laptop"]);
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    expect(s.calls()).toEqual([
      "systemctl --user is-system-running",
      "systemctl --user daemon-reload",
      "systemctl --user enable a2a-node.service",
      "systemctl --user restart a2a-node.service",
      "loginctl enable-linger ann",
    ]);
    expect(r.stdout).toContain('a2a-node is running as node "laptop"');
    expect(r.stdout).toContain("status    a2a-node service status --user");
    const unit = readFileSync(join(s.home, ".config/systemd/user/a2a-node.service"), "utf8");
    expect(unit).toBe(renderUnit({ scope: "user", binary: requireBinary(), home: nodeHome }));
    expect(mode(nodeHome)).toBe(0o700);
    expect(mode(homePaths(nodeHome).nodeKey)).toBe(0o600);
    expect((await loadNodeIdentity(homePaths(nodeHome))).name).toBe("laptop");
  });

  it("--no-start enables without starting; --home and XDG_CONFIG_HOME are honoured", async () => {
    const s = sandbox();
    const nodeHome = join(s.dir, "node-home");
    const r = await s.run(["--home", nodeHome, "service", "install", "--user", "--name", "laptop", "--no-start"], {
      XDG_CONFIG_HOME: join(s.dir, "cfg"),
    });
    expect(r.code).toBe(0);
    expect(s.calls()).toEqual([
      "systemctl --user is-system-running",
      "systemctl --user daemon-reload",
      "systemctl --user enable a2a-node.service",
      "loginctl enable-linger ann",
    ]);
    expect(r.stdout).toContain("start it with: systemctl --user start a2a-node");
    expect(readFileSync(join(s.dir, "cfg/systemd/user/a2a-node.service"), "utf8")).toContain(
      `Environment=A2A_NODE_HOME=${nodeHome}`,
    );
  });

  it("a service that does not start is an error that says where to look", async () => {
    const s = sandbox();
    const r = await s.run(["service", "install", "--user", "--name", "laptop"], { FAKE_RESTART_FAILS: "1" });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(
      "a2a-node: a2a-node.service did not start (systemctl --user restart a2a-node.service exited 1: Job for a2a-node.service failed",
    );
    expect(r.stderr).toContain("next: see why: journalctl --user -u a2a-node -n 50 --no-pager");
  });
});

describe("service install refuses clearly, before changing anything", () => {
  it("without root for a system service: run with sudo, or --user", async () => {
    const s = sandbox();
    const r = await s.run(["service", "install", "--name", "beta"], {}, { asNobody: true });
    expect(r.code).toBe(1);
    expect(r.stderr).toBe(
      "a2a-node: installing a system service needs root\n  next: run it with sudo (sudo a2a-node service install ...), or install a service of your own user with --user\n",
    );
    expect(s.calls()).toEqual([]);
  });

  it("without systemctl: says this machine does not seem to run systemd", async () => {
    const s = sandbox(["useradd"]);
    const r = await s.run(["service", "install", "--root", s.root, "--name", "beta"], {}, { path: join(s.dir, "bin") });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("a2a-node: systemctl was not found on PATH: this machine does not seem to run systemd");
    expect(r.stderr).toContain("next: run 'a2a-node serve' under the supervisor this machine uses instead");
    expect(existsSync(s.root)).toBe(false);
    expect(s.calls()).toEqual([]);
  });

  it("where systemctl exists but systemd does not run (a container): says so, nothing created", async () => {
    const s = sandbox();
    const r = await s.run(["service", "install", "--user", "--name", "laptop"], { FAKE_OFFLINE: "1" });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(
      'a2a-node: systemd is not running for your user (no user service manager to talk to): systemctl says "offline"',
    );
    expect(r.stderr).toContain("next: run this from your own login session");
    expect(s.calls()).toEqual(["systemctl --user is-system-running"]);
    expect(existsSync(join(s.home, ".a2a-node"))).toBe(false);
    expect(existsSync(join(s.home, ".config"))).toBe(false);
  });

  it("without an identity to make or install: a usage error naming both ways, nothing created", async () => {
    const s = sandbox();
    const r = await s.run(["service", "install", "--root", s.root]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(
      "/var/lib/a2a-node has no identity yet: give --name NAME (a new fleet; this machine holds its CA) or --bundle FILE",
    );
    expect(existsSync(s.root)).toBe(false);
    expect(s.calls()).toEqual([]);
  });

  it.each([
    [["--user", "--root", "/tmp/x", "--name", "a"], "--root is for system services"],
    [["--name", "a", "--bundle", "b"], "--name and --bundle cannot be used together"],
    [["--bundle", "b", "--san", "x"], "--san and --days go with --name"],
    [["--nmae", "a"], "unknown flag '--nmae'"],
  ])("usage errors: %j", async (args, message) => {
    const s = sandbox();
    const r = await s.run(["service", "install", ...args]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(message);
    expect(r.stderr).toContain("see 'a2a-node service install --help'");
  });

  it("a missing bundle is named", async () => {
    const s = sandbox();
    const r = await s.run(["service", "install", "--root", s.root, "--bundle", "nope.bundle"]);
    expect(r.code).toBe(3);
    expect(r.stderr).toContain(`no bundle at ${join(s.dir, "nope.bundle")}`);
  });
});

describe("service status", () => {
  const freePort = () =>
    new Promise<number>((resolve) => {
      const srv = createServer().listen(0, "127.0.0.1", () => {
        const port = (srv.address() as { port: number }).port;
        srv.close(() => resolve(port));
      });
    });
  const ACTIVE =
    "LoadState=loaded\\nActiveState=active\\nSubState=running\\nUnitFileState=enabled\\nMainPID=4321\\nActiveEnterTimestamp=Mon 2026-01-05 10:00:00 UTC\\nNRestarts=0\\nResult=success\\n";

  it("shows the unit's state and the node's own readiness over mutual TLS; exit 0 when active and ready", async () => {
    const s = sandbox();
    const nodeHome = fleet.homes.alpha;
    const port = await freePort();
    writeFileSync(join(nodeHome, "config.toml"), `executor = "echo"\nport = ${port}\nhost = "127.0.0.1"\n`);
    mkdirSync(join(s.home, ".config/systemd/user"), { recursive: true });
    writeFileSync(
      join(s.home, ".config/systemd/user/a2a-node.service"),
      renderUnit({ scope: "user", binary: requireBinary(), home: nodeHome }),
    );
    const node = await serveBinary(nodeHome, ["--port", String(port)]);
    try {
      const r = await s.run(["--home", nodeHome, "service", "status", "--user"], { FAKE_SHOW: ACTIVE });
      expect(r.stderr).toBe("");
      expect(r.code).toBe(0);
      expect(r.stdout).toContain(
        "unit      active (running) since Mon 2026-01-05 10:00:00 UTC, PID 4321; enabled at boot",
      );
      expect(r.stdout).toContain(
        `health    ready: the echo executor needs nothing external (https://127.0.0.1:${port}/health/ready)`,
      );
      expect(s.calls()[0]).toBe(
        "systemctl --user show a2a-node.service --property=LoadState,ActiveState,SubState,UnitFileState,MainPID,ActiveEnterTimestamp,NRestarts,Result",
      );

      const j = await s.run(["--home", nodeHome, "service", "status", "--user", "--json"], { FAKE_SHOW: ACTIVE });
      expect(JSON.parse(j.stdout)).toMatchObject({
        scope: "user",
        home: nodeHome,
        ok: true,
        unit: { ActiveState: "active", MainPID: "4321" },
        health: { ready: true, answered: true },
      });
    } finally {
      await node.stop();
      rmSync(join(nodeHome, "config.toml"));
    }
    // The unit says active but nothing answers: not ok, and the line says so.
    const down = await s.run(["--home", nodeHome, "service", "status", "--user"], { FAKE_SHOW: ACTIVE });
    expect(down.code).toBe(1);
    expect(down.stdout).toMatch(/health {4}NO ANSWER: nothing is listening there/);
  });

  it("a failed unit: exit 1 with where to look; no unit: exit 3 with how to install", async () => {
    const s = sandbox();
    mkdirSync(join(s.home, ".config/systemd/user"), { recursive: true });
    writeFileSync(join(s.home, ".config/systemd/user/a2a-node.service"), "x");
    const failed = await s.run(["service", "status", "--user"], {
      FAKE_SHOW: "ActiveState=failed\\nSubState=failed\\nUnitFileState=enabled\\nResult=exit-code\\nNRestarts=5\\n",
    });
    expect(failed.code).toBe(1);
    expect(failed.stdout).toContain(
      "unit      failed (failed), restarted 5 times; enabled at boot; last result: exit-code",
    );
    expect(failed.stderr).toContain(
      "a2a-node: the service is failed\n  next: see why: journalctl --user -u a2a-node -n 50 --no-pager; start it: systemctl --user start a2a-node",
    );

    const none = sandbox();
    const r = await none.run(["service", "status", "--user"]);
    expect(r.code).toBe(3);
    expect(r.stderr).toContain("next: install it: a2a-node service install --user --name NAME");
  });
});

describe("readiness under systemd", () => {
  it("serve runs systemd-notify --ready once it listens, when NOTIFY_SOCKET is set", async () => {
    const s = sandbox([]);
    const bin = join(s.dir, "bin");
    const fifo = join(s.dir, "notify.fifo");
    expect(Bun.spawnSync(["mkfifo", fifo]).exitCode).toBe(0);
    // The fake notifier proves the port is open when it is called (bash's /dev/tcp connects to it), then
    // writes what it was given into a FIFO this test is reading: its write is the event awaited.
    writeFileSync(
      join(bin, "systemd-notify"),
      `#!/bin/bash\nport=$(grep -o 'https://127.0.0.1:[0-9]*' <<<"$*" | cut -d: -f3)\nif (exec 3<>/dev/tcp/127.0.0.1/$port); then state=listening; else state=closed; fi\necho "$state $NOTIFY_SOCKET $*" > ${fifo}\n`,
    );
    chmodSync(join(bin, "systemd-notify"), 0o755);
    const told = readFile(fifo, "utf8");
    const node = await serveBinary(fleet.homes.alpha, ["--executor", "echo"], {
      PATH: `${bin}:/usr/bin:/bin`,
      NOTIFY_SOCKET: "/run/fake-notify",
    });
    try {
      expect(await told).toBe(
        `listening /run/fake-notify --ready --status=serving alpha on https://127.0.0.1:${node.port}\n`,
      );
    } finally {
      await node.stop();
    }
  });

  it("with NOTIFY_SOCKET set but no systemd-notify to run, the log warns that systemd will time out", async () => {
    const s = sandbox([]);
    const node = await serveBinary(fleet.homes.alpha, ["--executor", "echo"], {
      PATH: join(s.dir, "bin"),
      NOTIFY_SOCKET: "/run/fake-notify",
    });
    try {
      const line = await node.waitForLine({ msg: /could not be told/ });
      expect(line.msg).toMatch(
        /systemd waits for readiness \(NOTIFY_SOCKET is set\) but could not be told; it will stop the service at its start timeout/,
      );
    } finally {
      await node.stop();
    }
  });
});
