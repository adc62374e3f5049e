import type { Command, CommandContext } from "../command";
import { ExitCode, UsageError } from "../errors";
import { parseFlags } from "../flags";

const flags = {
  config: { type: "string", value: "FILE" },
  timeout: { type: "number", value: "SECONDS" },
  json: { type: "boolean" },
} as const;

const help = `USAGE
  a2a-node doctor [--config FILE] [--timeout S] [--json]

  Checks, in order: the home's permissions (folders 0700, keys and database 0600, owned by the home's
  owner); the certificate (valid now, days to expiry, issued by the fleet CA in this home, its key
  matches); the configuration; the port (free, or held by this home's running node, which must answer on
  it); the model endpoint the executor uses; the database (opens, can be written; with database_url,
  Postgres answers and takes writes); and each peer (its agent card fetched over mutual TLS, its
  certificate name and pin checked). When this home's node runs, it is judged as it runs, flags
  included: the port it listens on, and its model endpoint and database as its own readiness check
  finds them (HOME/serve.json says where it listens and how it was started). Each line is ✓ (fine),
  ! (works, but see to it), ✗ (broken; the line after says what to do) or - (not checked, and why).
  Settings are read as 'serve' would: HOME/config.toml (or --config) and A2A_NODE_* variables; for the
  system service's home, /etc/default/a2a-node instead of your environment, as the service sees it. For the
  system service run it with sudo: as root it checks /var/lib/a2a-node.

FLAGS
  --config FILE   the config file the node runs with (default HOME/config.toml)
  --timeout S     seconds to wait for the model endpoint and each peer (default 5)
  --json          print {"home", "ok", "checks": [{check, status, detail, fix}]} on one line
  --home DIR      node home (default $A2A_NODE_HOME, else ~/.a2a-node)

EXAMPLES
  a2a-node doctor
  sudo a2a-node doctor                     # the system service's home
  a2a-node doctor --json | jq -r '.checks[] | select(.status == "fail") | .fix'

EXIT CODES
  0  nothing is broken (warnings allowed)
  1  at least one check failed
  2  usage error
`;

const MARK = { ok: "✓", warn: "!", fail: "✗", skip: "-" } as const;

async function run(argv: string[], ctx: CommandContext): Promise<number> {
  const { flags: f, positionals } = parseFlags(argv, flags);
  if (positionals.length) throw new UsageError(`unexpected argument '${positionals[0]}'`);
  const timeout = f.timeout ?? 5;
  if (!(timeout > 0 && timeout <= 300))
    throw new UsageError(`--timeout must be a number of seconds from more than 0 to 300 (got ${f.timeout})`);
  const { runDoctor } = await import("../../doctor/doctor");
  const findings = await runDoctor({
    home: ctx.home,
    env: ctx.io.env,
    configFile: f.config,
    timeoutMs: timeout * 1000,
  });
  const failed = findings.filter((x) => x.status === "fail").length;
  const warned = findings.filter((x) => x.status === "warn").length;
  if (f.json) ctx.io.stdout.write(`${JSON.stringify({ home: ctx.home, ok: failed === 0, checks: findings })}\n`);
  else {
    const w = Math.max(...findings.map((x) => x.check.length));
    const lines = [`a2a-node doctor: ${ctx.home}`];
    for (const x of findings) {
      lines.push(`${MARK[x.status]} ${x.check.padEnd(w)}  ${x.detail}`);
      if (x.fix) lines.push(`  ${" ".repeat(w)}  fix: ${x.fix}`);
    }
    lines.push(
      failed
        ? `${failed} problem${failed === 1 ? "" : "s"}${warned ? `, ${warned} warning${warned === 1 ? "" : "s"}` : ""}`
        : warned
          ? `no problems, ${warned} warning${warned === 1 ? "" : "s"}`
          : "no problems",
    );
    ctx.io.stdout.write(`${lines.join("\n")}\n`);
  }
  return failed ? ExitCode.Failure : ExitCode.Ok;
}

export const doctorCommand: Command = {
  name: "doctor",
  summary: "check this node's home, certificates, port, model, database and peers",
  help,
  flags,
  run,
};
