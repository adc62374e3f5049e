/**
 * The unit's whole life under a real systemd: a minimal Debian 12 booted with systemd-nspawn
 * (test/helpers/debian-container.ts), the compiled binary bound into it, every command run in it as an
 * operator would as root. `service install`, readiness by Type=notify, a task, `systemctl reload` (a minimal
 * Debian has no /bin/kill: reload must need nothing but the binary), a crash (kill -9) and systemd's restart,
 * stop, uninstall. Every CLI run carries NODE_EXTRA_CA_CERTS naming a file this system lacks (the environment
 * of a host with ca-certificates, as nsenter or sudo -E carry it): no runtime warning may appear in its output.
 * test/e2e/service-install.test.ts covers what install writes, with recording fakes.
 *
 * It needs root, and installs debootstrap and systemd-container if missing; the root file system is made once
 * (a few minutes) and cached outside the repository. A2A_NODE_TEST_SYSTEMD=skip leaves it out on purpose.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { requireBinary } from "../helpers/binary";
import { bootContainer, ensureRootfs, ensureTools, type Container } from "../helpers/debian-container";

const SKIP = process.env.A2A_NODE_TEST_SYSTEMD === "skip";
const BINARY_INSIDE = "/opt/a2a-node-under-test/a2a-node";
/** What the operator's shell would carry in: a CA bundle path from a machine that has one. */
const OPERATOR_ENV = { NODE_EXTRA_CA_CERTS: "/etc/ssl/certs/ca-certificates.crt" };

let box: Container | undefined;

/** A command as root in the container; its output must not hold Bun's warning about the missing CA file. */
async function sh(argv: string[], env: Record<string, string> = OPERATOR_ENV) {
  const r = await box!.exec(argv, { env });
  expect(`${r.stdout}${r.stderr}`).not.toContain("Ignoring extra certs");
  return r;
}
const a2a = (...args: string[]) => sh(["a2a-node", ...args]);
async function show(...props: string[]): Promise<Record<string, string>> {
  const r = await sh(["systemctl", "show", "a2a-node", `--property=${props.join(",")}`]);
  return Object.fromEntries(
    r.stdout
      .trim()
      .split("\n")
      .map((l) => [l.slice(0, l.indexOf("=")), l.slice(l.indexOf("=") + 1)]),
  );
}
/** The node's log lines (JSON under systemd) with the given msg. */
async function logged(msg: string): Promise<Record<string, unknown>[]> {
  const r = await sh(["journalctl", "-u", "a2a-node", "-o", "cat", "--no-pager"]);
  return r.stdout
    .split("\n")
    .filter((l) => l.startsWith("{"))
    .map((l) => JSON.parse(l) as Record<string, unknown>)
    .filter((l) => l.msg === msg);
}

describe.skipIf(SKIP)(
  `a real systemd: Debian 12 in systemd-nspawn${SKIP ? " (skipped: A2A_NODE_TEST_SYSTEMD=skip)" : ""}`,
  () => {
    beforeAll(async () => {
      const binary = requireBinary();
      await ensureTools();
      const root = await ensureRootfs((line) => process.stderr.write(`${line}\n`));
      box = await bootContainer(root, { [binary]: BINARY_INSIDE });
      // The binary reaches the container as a file to install, as a person copies it onto a machine.
      const copied = await box.exec(["cp", BINARY_INSIDE, "/root/a2a-node"]);
      expect(copied.code, copied.stderr).toBe(0);
    }, 30 * 60_000);
    afterAll(async () => {
      await box?.stop();
    }, 60_000);

    it("service install: the system user, the home, the unit; started, ready by Type=notify", async () => {
      // No model server in the container: the echo executor, set where the README says settings go.
      expect((await sh(["sh", "-c", "echo A2A_NODE_EXECUTOR=echo > /etc/default/a2a-node"])).code).toBe(0);
      expect((await sh(["test", "-e", "/bin/kill"])).code).not.toBe(0); // the point of a minimal Debian
      const r = await sh(["/root/a2a-node", "service", "install", "--name", "box"]);
      expect(r.code, `${r.stdout}${r.stderr}\n${box!.console()}`).toBe(0);
      expect(r.stdout).toContain("started a2a-node.service: serving");
      const unit = await show("Type", "NotifyAccess", "ActiveState", "SubState", "StatusText", "User", "ExecReload");
      expect(unit).toMatchObject({
        Type: "notify",
        NotifyAccess: "all",
        ActiveState: "active",
        SubState: "running",
        StatusText: "serving box on https://0.0.0.0:9443",
        User: "a2a-node",
      });
      expect(unit.ExecReload).toContain(
        "path=/usr/local/bin/a2a-node ; argv[]=/usr/local/bin/a2a-node reload --pid $MAINPID",
      );
      const status = await a2a("service", "status");
      expect(status.code, status.stdout + status.stderr).toBe(0);
      expect((await sh(["stat", "-c", "%U %a", "/var/lib/a2a-node"])).stdout.trim()).toBe("a2a-node 700");
    });

    it("a task, from the CLI as root, to the node the unit runs", async () => {
      const r = await a2a(
        "send",
        "--agent",
        "https://127.0.0.1:9443",
        "--task",
        "hello from systemd",
        "--wait",
        "--json",
      );
      expect(r.code, r.stderr).toBe(0);
      expect(JSON.parse(r.stdout).artifacts[0].parts[0].text).toBe("hello from systemd");
      const ping = await a2a("peers", "ping", "https://127.0.0.1:9443");
      expect(ping.code, ping.stderr).toBe(0);
    });

    it("systemctl reload: the node reads its config again; a config it refuses fails the reload and it runs on", async () => {
      expect((await sh(["sh", "-c", "echo 'rate_limit_per_second = 50' > /var/lib/a2a-node/config.toml"])).code).toBe(
        0,
      );
      const ok = await sh(["systemctl", "reload", "a2a-node"]);
      expect(ok.code, `${ok.stderr}\n${(await sh(["systemctl", "status", "a2a-node", "--no-pager"])).stdout}`).toBe(0);
      expect(await logged("reloaded")).toContainEqual(expect.objectContaining({ applied: "rate_limit_per_second" }));

      expect((await sh(["sh", "-c", "echo 'port = = 1' > /var/lib/a2a-node/config.toml"])).code).toBe(0);
      const refused = await sh(["systemctl", "reload", "a2a-node"]);
      expect(refused.code).not.toBe(0);
      expect(await logged("reload refused; the running configuration stays")).toHaveLength(1);
      expect((await show("ActiveState")).ActiveState).toBe("active");
      expect((await sh(["rm", "/var/lib/a2a-node/config.toml"])).code).toBe(0);
      expect((await sh(["systemctl", "reload", "a2a-node"])).code).toBe(0);
    });

    it("kill -9: systemd restarts it (Restart=on-failure), and it serves the same node and tasks", async () => {
      const before = await show("MainPID", "NRestarts");
      const journal = box!.follow("a2a-node");
      try {
        // dash's own kill: the container has no /bin/kill.
        expect((await sh(["sh", "-c", `kill -KILL ${before.MainPID}`])).code).toBe(0);
        await journal.waitFor(/"msg":"serving A2A over mTLS"/, 60_000);
      } finally {
        journal.stop();
      }
      // Ready again once systemd has the notification: systemctl start (a no-op on a running unit) waits for it.
      expect((await sh(["systemctl", "start", "a2a-node"])).code).toBe(0);
      const after = await show("MainPID", "NRestarts", "ActiveState");
      expect(after.ActiveState).toBe("active");
      expect(after.MainPID).not.toBe(before.MainPID);
      expect(Number(after.NRestarts)).toBe(Number(before.NRestarts) + 1);
      const list = await a2a("tasks", "list", "--agent", "https://127.0.0.1:9443", "--json");
      expect(list.code, list.stderr).toBe(0);
      expect(
        JSON.parse(list.stdout).tasks.map((t: { task: { status: { state: string } } }) => t.task.status.state),
      ).toEqual(["TASK_STATE_COMPLETED"]);
    });

    it("systemctl stop: a clean stop (SIGTERM, exit 0); service uninstall removes the unit and keeps the home", async () => {
      expect((await sh(["systemctl", "stop", "a2a-node"])).code).toBe(0);
      expect(await show("ActiveState", "Result")).toMatchObject({ ActiveState: "inactive", Result: "success" });
      expect((await logged("stopped")).length).toBeGreaterThanOrEqual(1);

      const r = await a2a("service", "uninstall");
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout).toContain("removed /etc/systemd/system/a2a-node.service");
      expect((await sh(["test", "-e", "/etc/systemd/system/a2a-node.service"])).code).not.toBe(0);
      expect((await show("LoadState")).LoadState).toBe("not-found");
      expect((await sh(["test", "-f", "/var/lib/a2a-node/certs/node.crt"])).code).toBe(0);
      expect((await a2a("service", "status")).code).toBe(3);
    });
  },
);
