import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { DEFAULT_SYSTEM_UNIT, renderUnit } from "../../src/service/unit";
import { tempDir } from "../helpers/temp-dir";

const ROOT = join(import.meta.dirname, "..", "..");
const tmp = tempDir("a2a-unit-");

const USER_UNIT = { scope: "user" as const, binary: "/home/ann/bin/a2a-node", home: "/home/ann/.a2a-node" };
const keys = (unit: string) => unit.split("\n").filter((l) => /^[A-Za-z]+=/.test(l));

describe("the systemd unit", () => {
  it("system unit: scripts/systemd/a2a-node.service is exactly what service install writes (golden)", () => {
    expect(renderUnit(DEFAULT_SYSTEM_UNIT)).toBe(
      readFileSync(join(ROOT, "scripts", "systemd", "a2a-node.service"), "utf8"),
    );
  });

  it("user unit matches its golden file", () => {
    expect(renderUnit(USER_UNIT)).toBe(
      readFileSync(join(import.meta.dirname, "golden", "a2a-node.user.service"), "utf8"),
    );
  });

  it("system unit: own user, state directory as the home, readiness by notify, reload by the binary itself (no /bin/kill), sandboxed, no MemoryDenyWriteExecute", () => {
    const unit = keys(renderUnit(DEFAULT_SYSTEM_UNIT));
    for (const line of [
      "Type=notify",
      "NotifyAccess=all",
      "User=a2a-node",
      "Group=a2a-node",
      "StateDirectory=a2a-node",
      "StateDirectoryMode=0700",
      "Environment=A2A_NODE_HOME=/var/lib/a2a-node",
      "ExecStart=/usr/local/bin/a2a-node serve",
      "ExecReload=/usr/local/bin/a2a-node reload --pid $MAINPID",
      "Restart=on-failure",
      "RestartPreventExitStatus=2",
      "NoNewPrivileges=yes",
      "ProtectSystem=strict",
      "ProtectHome=yes",
      "PrivateTmp=yes",
      "SystemCallFilter=@system-service",
      "WantedBy=multi-user.target",
    ])
      expect(unit).toContain(line);
    expect(unit.some((l) => l.startsWith("MemoryDenyWriteExecute"))).toBe(false);
  });

  it("user unit: no User, no mount sandboxing a user manager cannot apply, started with the user's manager", () => {
    const unit = keys(renderUnit(USER_UNIT));
    expect(unit).toContain("Environment=A2A_NODE_HOME=/home/ann/.a2a-node");
    expect(unit).toContain("ExecStart=/home/ann/bin/a2a-node serve");
    expect(unit).toContain("ExecReload=/home/ann/bin/a2a-node reload --pid $MAINPID");
    expect(unit).toContain("WantedBy=default.target");
    for (const absent of [
      "User=",
      "StateDirectory=",
      "ProtectSystem=",
      "ProtectHome=",
      "PrivateTmp=",
      "MemoryDenyWriteExecute=",
    ])
      expect(unit.some((l) => l.startsWith(absent))).toBe(false);
  });

  it("paths with spaces, quotes, % and $ are quoted and escaped as systemd reads them", () => {
    const unit = renderUnit({ scope: "user", binary: "/opt/my tools/a2a$node%i", home: '/home/a "b"/.a2a-node' });
    expect(unit).toContain('ExecStart="/opt/my tools/a2a$$node%%i" serve');
    expect(unit).toContain('ExecReload="/opt/my tools/a2a$$node%%i" reload --pid $MAINPID');
    expect(unit).toContain('Environment="A2A_NODE_HOME=/home/a \\"b\\"/.a2a-node"');
  });
});

// systemd-analyze is part of systemd: on a machine without it there is nothing to verify against.
const analyze = Bun.which("systemd-analyze");
describe.skipIf(!analyze)(
  `systemd-analyze verify${analyze ? "" : " (skipped: systemd-analyze is not installed on this machine)"}`,
  () => {
    /** Verifies a rendered unit; ExecStart must name an executable that exists, so this binary stands in. */
    function verify(scope: "system" | "user", home: string, name = "a2a-node.service") {
      const dir = mkdtempSync(join(tmp, "v-"));
      const path = join(dir, name);
      writeFileSync(path, renderUnit({ scope, binary: process.execPath, home }));
      // A user unit is checked by a user manager, which needs a runtime directory even to verify.
      const env = { ...process.env, XDG_RUNTIME_DIR: dir, SYSTEMD_LOG_COLOR: "0" };
      const p = Bun.spawnSync([analyze as string, ...(scope === "user" ? ["--user"] : []), "verify", path], {
        env,
        stdout: "pipe",
        stderr: "pipe",
      });
      return { code: p.exitCode, out: `${p.stdout.toString()}${p.stderr.toString()}` };
    }

    it("passes on the system unit, without a single warning", () => {
      expect(verify("system", "/var/lib/a2a-node")).toEqual({ code: 0, out: "" });
    });

    it("passes on the user unit, without a single warning", () => {
      expect(verify("user", join(tmp, "home with space", ".a2a-node"))).toEqual({ code: 0, out: "" });
    });

    it("is a real check: a unit with an unknown key or a missing binary is reported", () => {
      const dir = mkdtempSync(join(tmp, "bad-"));
      const path = join(dir, "a2a-node.service");
      writeFileSync(
        path,
        renderUnit({ scope: "system", binary: join(dir, "no-such-binary"), home: "/var/lib/a2a-node" }).replace(
          "[Install]",
          "Bogus=1\n[Install]",
        ),
      );
      const p = Bun.spawnSync([analyze as string, "verify", path], { stdout: "pipe", stderr: "pipe" });
      const out = `${p.stdout.toString()}${p.stderr.toString()}`;
      expect(p.exitCode).not.toBe(0);
      expect(out).toContain("no-such-binary");
      expect(out).toContain("Unknown key");
    });
  },
);
