import type { Command, CommandContext, Subcommand } from "./command";
import { suggest } from "./did-you-mean";
import { UsageError } from "./errors";

/**
 * The one shape of a command with subcommands (`pki`, `peers`, `tokens`, `service`, `tasks`, `completion`):
 * each subcommand lives in its own file as a Subcommand, and the group's help, each subcommand's own help and
 * the dispatch are all built here from those parts, so `pki token --help` describes `pki token` alone and the
 * group's help cannot drift from what its subcommands parse.
 */
export interface GroupSpec {
  name: string;
  /** One line for the top-level help. */
  summary: string;
  /** Paragraphs before USAGE, about the group as a whole ("" for none). */
  intro: string;
  subcommands: readonly Subcommand[];
  /** FLAGS lines every subcommand shares (--json, --home), after each one's own. */
  commonFlagHelp?: string;
  /** Lines after the FLAGS section (settings, where logs go), indented. */
  notes?: string;
  /** The EXIT CODES section, shared by every subcommand. */
  exitCodes: string;
  /** Turns a library's error into one the CLI reports (e.g. PkiError into CliError). */
  mapError?(err: unknown): unknown;
  /** Runs after every subcommand, whether it succeeded or not. */
  finally?(ctx: CommandContext): void;
}

/** A summary's lines, trimmed: subcommand files indent continuation lines to line up in their own source. */
const lines = (text: string) => text.split("\n").map((l) => l.trim());
const usageLines = (sub: Subcommand) => lines(sub.usage).map((l) => `  ${l.startsWith("sudo ") ? l : `a2a-node ${l}`}`);
const section = (heading: string, body: string) => (body.trim() ? `${heading}\n${body.replace(/\n+$/, "")}\n` : "");

export function commandGroup(spec: GroupSpec): Command {
  const names = spec.subcommands.map((s) => s.name);
  const column = Math.max(...names.map((n) => n.length)) + 2;
  const summaryLines = (sub: Subcommand) => {
    const [first, ...rest] = lines(sub.summary);
    return [`  ${sub.name.padEnd(column)} ${first}`, ...rest.map((l) => `${" ".repeat(column + 3)}${l}`)].join("\n");
  };
  const common = spec.commonFlagHelp ?? "";
  const groupFlags =
    spec.subcommands
      .filter((s) => s.flagHelp)
      .map((s) => `  (${s.name})\n${s.flagHelp}`)
      .join("\n") + (common ? `\n${common}` : "");
  const help = [
    spec.intro ? `${spec.intro.replace(/\n+$/, "")}\n` : "",
    section("USAGE", spec.subcommands.flatMap(usageLines).join("\n")),
    section("SUBCOMMANDS", spec.subcommands.map(summaryLines).join("\n")),
    section("FLAGS", groupFlags),
    spec.notes ? `${spec.notes.replace(/\n+$/, "")}\n` : "",
    section("EXAMPLES", spec.subcommands.map((s) => s.examples.replace(/\n+$/, "")).join("\n\n")),
    section("EXIT CODES", spec.exitCodes),
  ]
    .filter(Boolean)
    .join("\n");

  const subHelp = (sub: Subcommand) =>
    [
      `a2a-node ${spec.name} ${sub.name}\n\n${lines(sub.summary)
        .map((l) => `  ${l}`)
        .join("\n")}\n`,
      section("USAGE", usageLines(sub).join("\n")),
      section("FLAGS", [sub.flagHelp, common].filter(Boolean).join("\n")),
      section("EXAMPLES", sub.examples),
      section("EXIT CODES", spec.exitCodes),
      `See 'a2a-node ${spec.name} --help' for the other subcommands.\n`,
    ]
      .filter(Boolean)
      .join("\n");

  return {
    name: spec.name,
    summary: spec.summary,
    help,
    flags: {},
    subcommands: spec.subcommands,
    subcommandHelp(name) {
      const sub = spec.subcommands.find((s) => s.name === name);
      return sub && subHelp(sub);
    },
    async run(argv, ctx) {
      const [name, ...rest] = argv;
      if (name === undefined) throw new UsageError(`${spec.name} needs a subcommand: ${names.join(", ")}`);
      const sub = spec.subcommands.find((s) => s.name === name);
      if (!sub)
        throw new UsageError(
          `unknown ${spec.name} subcommand '${name}'${suggest(name, names)} (expected ${names.join(", ")})`,
        );
      try {
        return await sub.run(rest, ctx);
      } catch (err) {
        throw spec.mapError ? spec.mapError(err) : err;
      } finally {
        spec.finally?.(ctx);
      }
    },
  };
}
