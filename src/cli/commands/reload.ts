import { homeLockHolder, isServing } from "../../home-lock";
import { readRuntimeFile, type ReloadRecord } from "../../runtime-state";
import type { Command } from "../command";
import { CliError, ExitCode, UsageError } from "../errors";
import { parseFlags } from "../flags";

const flags = {
  pid: { type: "number", value: "PID" },
  timeout: { type: "number", value: "SECONDS" },
  json: { type: "boolean" },
} as const;

/**
 * `a2a-node reload`: SIGHUP to the running serve, then its outcome. It is also the unit's ExecReload, so
 * `systemctl reload a2a-node` needs nothing but this binary (a minimal Debian has no /bin/kill), returns once
 * the node has read its config again, and fails when the node refused the new config (it keeps running on
 * the old one).
 */
export const reloadCommand: Command = {
  name: "reload",
  summary: "make the running node read its config file and certificate again, and say how it went",
  help: `Make the running 'a2a-node serve' of this home read its config file and certificate again, as SIGHUP does,
and wait until it has: prints what it applied, what needs a restart, or why it refused the new config (a
config that does not parse is refused and the running one stays). The unit 'service install' writes runs it
as ExecReload, so 'systemctl reload a2a-node' does this.

USAGE
  a2a-node reload [--pid PID] [--timeout S] [--json]

FLAGS
  --pid PID      the serve process to reload (default: the one holding this home, from HOME/serve.pid);
                 systemd passes $MAINPID
  --timeout S    how long to wait for the node to say it reloaded (default 30)
  --json         print {"pid", "outcome", "applied", "needsRestart", "reason"} on one line
  --home DIR     node home (default $A2A_NODE_HOME, else ~/.a2a-node)

EXAMPLES
  a2a-node reload
  sudo systemctl reload a2a-node           # runs 'a2a-node reload --pid $MAINPID'

EXIT CODES
  0 reloaded (changes that need a restart are named)   1 the node refused the new config, or did not say
  within --timeout   2 usage error   3 no serve runs on this home (or PID is not one)
`,
  flags,
  async run(argv, { io, home }) {
    const { flags: f, positionals } = parseFlags(argv, flags);
    if (positionals.length) throw new UsageError(`unexpected argument '${positionals[0]}'`);
    const timeoutS = f.timeout ?? 30;
    if (!(timeoutS > 0 && timeoutS <= 3600))
      throw new UsageError(`--timeout must be a number of seconds from more than 0 to 3600 (got ${f.timeout})`);
    if (f.pid !== undefined && !(Number.isInteger(f.pid) && f.pid > 0))
      throw new UsageError(`--pid must be a process id (got ${f.pid})`);
    const pid = f.pid ?? homeLockHolder(home);
    if (pid === undefined)
      throw new CliError(
        `no a2a-node serve is running on ${home}`,
        ExitCode.NotFound,
        "start it ('a2a-node serve', or 'systemctl start a2a-node'); a node that is not running reads its config when it starts",
      );
    if (!isServing(pid))
      throw new CliError(
        `process ${pid} is not an a2a-node serve`,
        ExitCode.NotFound,
        "pass the PID of 'a2a-node serve' (systemctl show -p MainPID a2a-node), or leave --pid out",
      );

    // The node writes HOME/serve.json after each reload; without it (an older node) the signal is all we can do.
    const before = ownState(home, pid);
    process.kill(pid, "SIGHUP");
    if (!before) {
      io.stdout.write(
        f.json
          ? `${JSON.stringify({ pid, outcome: "signalled" })}\n`
          : `sent SIGHUP to a2a-node serve (PID ${pid}); its log says what it applied\n`,
      );
      return ExitCode.Ok;
    }
    const done = await reloadAfter(home, pid, before.reload?.count ?? 0, timeoutS * 1000);
    if (!done)
      throw new CliError(
        `a2a-node serve (PID ${pid}) did not say within ${timeoutS} s that it reloaded`,
        ExitCode.Failure,
        "see its log (journalctl -u a2a-node -n 20), or wait longer with --timeout",
      );
    if (f.json)
      io.stdout.write(
        `${JSON.stringify({ pid, outcome: done.outcome, applied: done.applied, needsRestart: done.needsRestart, reason: done.reason ?? null })}\n`,
      );
    if (done.outcome === "refused") {
      if (f.json) return ExitCode.Failure;
      throw new CliError(
        `a2a-node serve (PID ${pid}) refused the new configuration and keeps running on the old one: ${done.reason}`,
        ExitCode.Failure,
        "fix the config file ('a2a-node serve --check' says what is wrong), then reload again",
      );
    }
    if (!f.json) {
      io.stdout.write(
        `reloaded a2a-node serve (PID ${pid}): ${done.applied.length ? `applied ${done.applied.join(", ")}` : "nothing changed"}\n`,
      );
      if (done.needsRestart.length)
        io.stderr.write(
          `warning: these changes take effect only after a restart: ${done.needsRestart.join(", ")} (systemctl restart a2a-node)\n`,
        );
    }
    return ExitCode.Ok;
  },
};

function ownState(home: string, pid: number) {
  const state = readRuntimeFile(home);
  return state?.pid === pid ? state : undefined;
}

/** The node's record of the reload after the `count`th, once it is written; undefined at the deadline. */
async function reloadAfter(
  home: string,
  pid: number,
  count: number,
  timeoutMs: number,
): Promise<ReloadRecord | undefined> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const reload = ownState(home, pid)?.reload;
    if (reload && reload.count > count) return reload;
    if (Date.now() >= deadline) return undefined;
    // The node rewrites one small file when it is done; looking ten times a second costs nothing.
    await Bun.sleep(Math.min(100, Math.max(0, deadline - Date.now())));
  }
}
