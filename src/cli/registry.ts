import { PkiError } from "../../pki";
import { resolveHome } from "../home";
import { VERSION } from "../version";
import type { Command } from "./command";
import { initPkiCommand } from "./commands/init-pki";
import { peersCommand } from "./commands/peers";
import { pkiCommand } from "./commands/pki";
import { sendCommand } from "./commands/send";
import { serveCommand } from "./commands/serve";
import { statusCommand } from "./commands/status";
import { versionCommand } from "./commands/version";
import { CliError, ExitCode, UsageError } from "./errors";
import type { Io } from "./io";

/** Every command of the binary, in the order the help lists them. */
export const COMMANDS: readonly Command[] = [
  initPkiCommand,
  pkiCommand,
  serveCommand,
  peersCommand,
  sendCommand,
  statusCommand,
  versionCommand,
];

export const TOP_HELP = `a2a-node ${VERSION}: let AI agents on different machines delegate tasks to each other over mutual TLS (A2A v1.0).

USAGE
  a2a-node [--home DIR] COMMAND [FLAGS]

COMMANDS
${COMMANDS.map((c) => `  ${c.name.padEnd(10)} ${c.summary}`).join("\n")}

GLOBAL FLAGS
  --home DIR   the node's home folder (keys, certificates, database); env A2A_NODE_HOME;
               default ~/.a2a-node (created 0700)
  --help       help for a command: a2a-node COMMAND --help

EXAMPLES
  a2a-node init-pki --name alpha                      # machine A: fleet CA + alpha's certificate
  a2a-node pki issue beta --san 10.0.0.7 --out beta.bundle
  a2a-node init-pki --bundle beta.bundle              # machine B, after copying the bundle
  a2a-node serve --executor openai --model-url http://127.0.0.1:11434/v1
  a2a-node peers add beta https://10.0.0.7:9443
  a2a-node send --agent beta --task "summarise today's logs" --wait

EXIT CODES
  0 success   1 failure   2 usage error   3 not found   4 peer unreachable or refused   5 timed out
`;

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
  if (!name || name === "help" || name === "--help" || name === "-h") {
    const topic = name === "help" ? COMMANDS.find((c) => c.name === args[0]) : undefined;
    io.stdout.write(topic ? topic.help : TOP_HELP);
    return name ? ExitCode.Ok : ExitCode.Usage;
  }
  if (name === "--version" || name === "-v") return versionCommand.run([], { io, home: "" });
  const command = COMMANDS.find((c) => c.name === name);
  if (!command) return usage(io, `unknown command '${name}'`, undefined);
  if (args.includes("--help") || args.includes("-h")) {
    io.stdout.write(command.help);
    return ExitCode.Ok;
  }
  try {
    return await command.run(args, { io, home: resolveHome(homeFlag, io.env) });
  } catch (err) {
    if (err instanceof UsageError) return usage(io, err.message, command.name);
    if (err instanceof CliError) return fail(io, err.message, err.hint, err.exitCode);
    if (err instanceof PkiError) return fail(io, err.message, err.hint, ExitCode.Failure);
    return fail(io, `unexpected error: ${(err as Error)?.message ?? String(err)}`, undefined, ExitCode.Failure);
  }
}

function usage(io: Io, message: string, command: string | undefined): number {
  io.stderr.write(`a2a-node: ${message}\nsee 'a2a-node ${command ? `${command} ` : ""}--help'\n`);
  return ExitCode.Usage;
}

function fail(io: Io, message: string, hint: string | undefined, code: number): number {
  io.stderr.write(`a2a-node: ${message}\n${hint ? `  next: ${hint}\n` : ""}`);
  return code;
}
