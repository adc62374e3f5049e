import { resolveHome } from "../home";
import { VERSION } from "../version";
import type { Command } from "./command";
import { TOPICS } from "../help/topics";
import { closest, suggest } from "./did-you-mean";
import { CliError, EXIT_CODE_MEANINGS, ExitCode, UsageError } from "./errors";
import type { Io } from "./io";

/**
 * Every command of the binary, in the order the help lists them. Each is loaded only when it runs, so
 * `a2a-node serve` never pays for loading the certificate-issuing code, and `version` for neither.
 */
export interface CommandEntry {
  name: string;
  summary: string;
  load(): Promise<Command>;
}

export const COMMANDS: readonly CommandEntry[] = [
  {
    name: "init-pki",
    summary: "create this node's key and certificate (and the fleet CA), or install a bundle",
    load: async () => (await import("./commands/init-pki")).initPkiCommand,
  },
  {
    name: "pki",
    summary: "the fleet's certificates: token, issue, sign, import, list, revoke, renew, show, inspect",
    load: async () => (await import("./commands/pki")).pkiCommand,
  },
  {
    name: "join",
    summary: "join a fleet with a one-time token from 'pki token' (the key is made here)",
    load: async () => (await import("./commands/join")).joinCommand,
  },
  {
    name: "serve",
    summary: "run the node: A2A over mutual TLS, tasks in SQLite",
    load: async () => (await import("./commands/serve")).serveCommand,
  },
  {
    name: "peers",
    summary: "manage known peers: add, list, show, remove, discover, ping",
    load: async () => (await import("./commands/peers")).peersCommand,
  },
  {
    name: "fleet",
    summary: "this node and every peer in one table: reachable or why not, round trip, version, certificate, load",
    load: async () => (await import("./commands/fleet")).fleetCommand,
  },
  {
    name: "tokens",
    summary: "bearer tokens for callers outside the fleet: add, list, revoke",
    load: async () => (await import("./commands/tokens")).tokensCommand,
  },
  {
    name: "send",
    summary: "delegate a task to a peer (and optionally wait for its result)",
    load: async () => (await import("./commands/send")).sendCommand,
  },
  {
    name: "status",
    summary: "show a delegated task's state and result, or wait for it to end",
    load: async () => (await import("./commands/status")).statusCommand,
  },
  {
    name: "tasks",
    summary: "list the tasks this node delegated to its peers",
    load: async () => (await import("./commands/tasks")).tasksCommand,
  },
  {
    name: "cancel",
    summary: "cancel a task this node delegated to a peer",
    load: async () => (await import("./commands/cancel")).cancelCommand,
  },
  {
    name: "reload",
    summary: "make the running node read its config file and certificate again, and say how it went",
    load: async () => (await import("./commands/reload")).reloadCommand,
  },
  {
    name: "service",
    summary: "run this node under systemd: service install, uninstall, status",
    load: async () => (await import("./commands/service")).serviceCommand,
  },
  {
    name: "doctor",
    summary: "check this node's home, certificates, port, model, database and peers",
    load: async () => (await import("./commands/doctor")).doctorCommand,
  },
  {
    name: "completion",
    summary: "print a shell completion script: completion bash|zsh|fish",
    load: async () => (await import("./commands/completion")).completionCommand,
  },
  {
    name: "version",
    summary: "print the version of this binary",
    load: async () => (await import("./commands/version")).versionCommand,
  },
];

export const TOP_HELP = `a2a-node ${VERSION}: let AI agents on different machines delegate tasks to each other over mutual TLS (A2A v1.0).

USAGE
  a2a-node [--home DIR] COMMAND [FLAGS]
  a2a-node help [TOPIC | COMMAND [SUBCOMMAND]]     the manual's pages, and each command's help

COMMANDS
${COMMANDS.map((c) => `  ${c.name.padEnd(Math.max(...COMMANDS.map((x) => x.name.length)))}  ${c.summary}`).join("\n")}

GLOBAL FLAGS
  --home DIR   the node's home folder (keys, certificates, database); env A2A_NODE_HOME;
               default ~/.a2a-node (created 0700); as root, /var/lib/a2a-node once the system
               service is installed (a2a-node service install)
  --help       help for a command: a2a-node COMMAND --help (or a2a-node help COMMAND [SUBCOMMAND])

HELP TOPICS (a2a-node help TOPIC; the same pages are src/help/topics/TOPIC.md in the repository)
${TOPICS.map((t) => `  ${t.name.padEnd(Math.max(...TOPICS.map((x) => x.name.length)))}  ${t.summary}`).join("\n")}

EXAMPLES
  a2a-node init-pki --name alpha                      # machine A: fleet CA + alpha's certificate
  a2a-node pki issue beta --san 10.0.0.7 --out beta.bundle
  a2a-node init-pki --bundle beta.bundle              # machine B, after copying the bundle
  a2a-node serve --executor openai --model-url http://127.0.0.1:11434/v1
  a2a-node peers add beta https://10.0.0.7:9443 --pin
  a2a-node send --agent beta --task "summarise today's logs" --wait
  a2a-node tasks list                                 # what this node delegated, on every peer

EXIT CODES
${exitCodes()}
`;

/** Every ExitCode with its meaning, one a line, in code order. */
function exitCodes(): string {
  return (Object.keys(ExitCode) as (keyof typeof ExitCode)[])
    .sort((a, b) => ExitCode[a] - ExitCode[b])
    .map((k) => `  ${String(ExitCode[k]).padStart(3)}  ${EXIT_CODE_MEANINGS[k]}`)
    .join("\n");
}

/** Runs one command line. Returns the exit code; all output goes through `io`. */
export async function runCli(argv: string[], io: Io): Promise<number> {
  let homeFlag: string | undefined;
  const rest: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === "--home") {
      if (i + 1 >= argv.length) return usage(io, "--home needs a value (DIR)", undefined);
      homeFlag = argv[++i];
    } else if (a.startsWith("--home=")) homeFlag = a.slice(7);
    else rest.push(a);
  }
  const [name, ...args] = rest;
  if (name === "help") return help(args, io);
  if (!name || name === "--help" || name === "-h") {
    io.stdout.write(TOP_HELP);
    return name ? ExitCode.Ok : ExitCode.Usage;
  }
  const entry =
    name === "--version" || name === "-v"
      ? COMMANDS.find((c) => c.name === "version")
      : COMMANDS.find((c) => c.name === name);
  if (!entry) {
    const topic = TOPICS.some((t) => t.name === name) ? ` ('${name}' is a help topic: a2a-node help ${name})` : "";
    return usage(
      io,
      `unknown command '${name}'${
        topic ||
        suggest(
          name,
          COMMANDS.map((c) => c.name),
        )
      }`,
      undefined,
    );
  }
  const command = await entry.load();
  if (args.includes("--help") || args.includes("-h")) {
    io.stdout.write(commandHelp(command, args[0]));
    return ExitCode.Ok;
  }
  try {
    return await command.run(name.startsWith("-") ? [] : args, { io, home: resolveHome(homeFlag, io.env) });
  } catch (err) {
    if (err instanceof UsageError || (err as Error)?.name === "ConfigError") {
      // A subcommand's own help is the one that says how to call it.
      const sub = args[0] !== undefined && command.subcommandHelp?.(args[0]) ? ` ${args[0]}` : "";
      return usage(io, (err as Error).message, `${command.name}${sub}`);
    }
    if (err instanceof CliError) return fail(io, err.message, err.hint, err.exitCode);
    // PkiError (and anything else that carries a hint) is reported the same way, without loading pki/ here.
    const e = err as { message?: string; hint?: string; name?: string };
    if (e?.name === "PkiError") return fail(io, e.message ?? "certificate error", e.hint, ExitCode.Failure);
    return fail(io, `unexpected error: ${e?.message ?? String(err)}`, undefined, ExitCode.Failure);
  }
}

/** A command's help, headed by its name and the same one-line summary the overview lists. */
export function helpText(command: Command): string {
  return `a2a-node ${command.name}: ${command.summary}\n\n${command.help}`;
}

/** `COMMAND --help`, or `COMMAND SUB --help`: the subcommand's own help when `sub` names one. */
function commandHelp(command: Command, sub: string | undefined): string {
  return (sub !== undefined && command.subcommandHelp?.(sub)) || helpText(command);
}

/**
 * `a2a-node help`: the overview; `help COMMAND [SUB]`: that command's help, as `COMMAND [SUB] --help`;
 * `help TOPIC`: a page of the manual.
 */
async function help(args: string[], io: Io): Promise<number> {
  const [word, sub, ...extra] = args;
  if (word === undefined) {
    io.stdout.write(TOP_HELP);
    return ExitCode.Ok;
  }
  const entry = COMMANDS.find((c) => c.name === word);
  if (entry) {
    const command = await entry.load();
    if (sub !== undefined && !command.subcommandHelp?.(sub)) {
      const names = (command.subcommands ?? []).map((s) => s.name);
      return usage(io, `'${word}' has no subcommand '${sub}'${suggest(sub, names)}`, word);
    }
    if (extra.length)
      return usage(io, `help takes a COMMAND and a SUBCOMMAND at most (got '${extra[0]}' too)`, undefined);
    io.stdout.write(commandHelp(command, sub));
    return ExitCode.Ok;
  }
  const topic = TOPICS.find((t) => t.name === word);
  if (!topic) {
    const guess = closest(word, [...TOPICS.map((t) => t.name), ...COMMANDS.map((c) => c.name)]);
    io.stderr.write(
      `a2a-node: no help topic or command '${word}'${guess ? ` (did you mean '${guess}'?)` : ""}\nsee 'a2a-node help' for the list\n`,
    );
    return ExitCode.Usage;
  }
  if (sub !== undefined) return usage(io, `help ${word} takes no further word (got '${sub}')`, undefined);
  io.stdout.write(topic.text);
  return ExitCode.Ok;
}

function usage(io: Io, message: string, command: string | undefined): number {
  io.stderr.write(`a2a-node: ${message}\nsee 'a2a-node ${command ? `${command} ` : ""}--help'\n`);
  return ExitCode.Usage;
}

function fail(io: Io, message: string, hint: string | undefined, code: number): number {
  io.stderr.write(`a2a-node: ${message}\n${hint ? `  next: ${hint}\n` : ""}`);
  return code;
}
