import type { Command, CommandContext } from "../command";
import { clientPolicy, loadClientIdentity, openPeers } from "../client-session";
import { ExitCode, UsageError } from "../errors";
import { parseFlags } from "../flags";
import { PEER_TIMEOUT_FLAGS, PEER_TIMEOUT_HELP } from "../peer-timeouts";
import { surveyFleet, type FleetRow } from "../fleet-survey";

const DEFAULT_TIMEOUT_S = 5;
const DEFAULT_INTERVAL_S = 2;

const flags = {
  json: { type: "boolean" },
  watch: { type: "boolean" },
  interval: { type: "number", value: "SECONDS" },
  timeout: { type: "number", value: "SECONDS" },
  ...PEER_TIMEOUT_FLAGS,
} as const;

export const fleetCommand: Command = {
  name: "fleet",
  summary: "this node and every peer in one table: reachable or why not, round trip, version, certificate, load",
  help: `Check this node and every peer at once and show them in one table, as this node sees them: whether each
answers (and if not, why, in the words 'send' and 'peers ping' use), the round trip of a GET /health once
connected, the version and executor it runs, its agent card's name and skills, when its certificate expires,
whether the key it showed matches the pin in the peer list, whether the fleet's revocation list this home
holds revokes it, and its load (tasks running, queued for a slot, waiting for input) read from the /metrics
it serves to fleet members. This node's row is its running serve, asked where HOME/serve.json says it
listens. Peers outside the fleet show their card and its round trip only.

All nodes are checked in parallel, each bounded by --timeout (a silent node cannot hold up the rest), so the
whole check takes at most that long.

USAGE
  a2a-node fleet [--json] [--watch [--interval S]] [--timeout S]

FLAGS
  --json           one JSON array on one line (with --watch: one line each round)
  --watch          check again every --interval seconds until Ctrl-C: on a terminal the table is redrawn in
                   place; piped, each round is written after the last, headed by its time
  --interval S     with --watch: seconds between rounds (default ${DEFAULT_INTERVAL_S})
  --timeout S      the bound on one node's whole check (default ${DEFAULT_TIMEOUT_S})
${PEER_TIMEOUT_HELP}

COLUMNS
  NODE      the peer's name (this node's is marked *)   STATE   up, down, refused, timeout, error, not running
  RTT       GET /health round trip, ms                  VERSION and EXECUTOR   as its /health says
  CERT      days until its certificate expires           PIN     key pin matches / DIFFERS / not pinned
  REVOKED   'revoked' when our revocation list names it  LOAD    running/queued/input-required, '-' if not shared
  CARD      the agent card's name and skill ids

EXAMPLES
  a2a-node fleet
  a2a-node fleet --json | jq '.[] | select(.state != "up") | {name, why}'
  a2a-node fleet --watch --interval 5

EXIT CODES
  0 every node answered   1 at least one did not (its row says why)   2 usage error   3 no home
  130 Ctrl-C (with --watch)
`,
  flags,
  async run(argv, ctx) {
    const { flags: f, positionals } = parseFlags(argv, flags);
    if (positionals.length) throw new UsageError(`fleet takes no arguments (got '${positionals[0]}')`);
    const timeoutS = f.timeout ?? DEFAULT_TIMEOUT_S;
    if (!(timeoutS > 0)) throw new UsageError(`--timeout must be a positive number of seconds (got ${f.timeout})`);
    const intervalS = f.interval ?? DEFAULT_INTERVAL_S;
    if (!(intervalS > 0)) throw new UsageError(`--interval must be a positive number of seconds (got ${f.interval})`);
    if (f.interval !== undefined && !f.watch) throw new UsageError("--interval goes with --watch");
    const identity = await loadClientIdentity(ctx.home);
    const policy = clientPolicy(ctx.home, ctx.io, f);
    const round = async () => {
      const { peers, close } = openPeers(ctx.home);
      let list;
      try {
        list = peers.list();
      } finally {
        close();
      }
      return surveyFleet(ctx.home, list, { identity, policy, perNodeMs: timeoutS * 1000 });
    };
    if (!f.watch) {
      const rows = await round();
      ctx.io.stdout.write(f.json ? `${JSON.stringify(rows)}\n` : renderTable(rows));
      return rows.every((r) => r.state === "up") ? ExitCode.Ok : ExitCode.Failure;
    }
    return watch(ctx, round, { json: f.json, intervalMs: intervalS * 1000 });
  },
};

/** Rounds until Ctrl-C: redrawn in place on a terminal, appended when piped (a log, or `| grep`). */
async function watch(
  ctx: CommandContext,
  round: () => Promise<FleetRow[]>,
  o: { json: boolean; intervalMs: number },
): Promise<number> {
  const { io } = ctx;
  const stop = io.interruptSignal;
  const redraw = !o.json && io.tty?.stdout === true;
  while (!stop?.aborted) {
    const rows = await round();
    if (stop?.aborted) break;
    if (o.json) io.stdout.write(`${JSON.stringify(rows)}\n`);
    else if (redraw)
      io.stdout.write(
        `\x1b[H\x1b[2J${new Date().toISOString()}  (every ${o.intervalMs / 1000} s; Ctrl-C to stop)\n\n${renderTable(rows)}`,
      );
    else io.stdout.write(`# ${new Date().toISOString()}\n${renderTable(rows)}\n`);
    await new Promise<void>((resolve) => {
      const timer = setTimeout(done, o.intervalMs);
      function done() {
        clearTimeout(timer);
        stop?.removeEventListener("abort", done);
        resolve();
      }
      stop?.addEventListener("abort", done, { once: true });
    });
  }
  return ExitCode.Interrupted;
}

/** The table, then one line per node that is not up, saying why (a reason does not fit in a column). */
export function renderTable(rows: FleetRow[]): string {
  const cells = rows.map((r) => [
    `${r.name}${r.role === "self" ? " *" : ""}`,
    r.state,
    r.ms === undefined ? "-" : `${r.ms}`,
    r.version ?? "-",
    r.executor ?? "-",
    r.certificate ? `${r.certificate.daysLeft}d` : "-",
    r.pin ?? "-",
    r.revokedAt ? "revoked" : r.certificate ? "no" : "-",
    r.load ? `${r.load.running}/${r.load.queued}/${r.load.inputRequired}` : "-",
    r.card ? `${r.card.name}${r.card.skills.length ? ` [${r.card.skills.join(", ")}]` : ""}` : "-",
  ]);
  const head = ["NODE", "STATE", "RTT", "VERSION", "EXECUTOR", "CERT", "PIN", "REVOKED", "LOAD", "CARD"];
  const widths = head.map((h, i) => Math.max(h.length, ...cells.map((c) => c[i].length)));
  const line = (c: string[]) =>
    c
      .map((v, i) => (i === c.length - 1 ? v : v.padEnd(widths[i])))
      .join("  ")
      .trimEnd();
  const revoked = (r: FleetRow) =>
    r.revokedAt && !/revoked/.test(r.why ?? "") ? ` (our revocation list revokes it since ${r.revokedAt})` : "";
  const why = rows.filter((r) => r.why).map((r) => `  ${r.name}: ${r.why}${revoked(r)}`);
  const noLoad = rows.filter((r) => r.loadWhy).map((r) => `  ${r.name}: load not shown: ${r.loadWhy}`);
  return `${[line(head), ...cells.map(line)].join("\n")}\n${why.length || noLoad.length ? `\n${[...why, ...noLoad].join("\n")}\n` : ""}`;
}
