/**
 * The two generated pages of the manual: the command reference (`a2a-node help commands`), from the command
 * registry and each command's flag specs, and the settings table (`a2a-node help settings`), from the settings
 * declarations. scripts/help-reference.ts writes them to src/help/topics/; a test keeps those files identical
 * to what these make, so a new command, flag or setting cannot be left out of the manual.
 */
import type { Command } from "./command";
import { EXIT_CODE_MEANINGS, ExitCode } from "./errors";
import type { FlagSpec } from "./flags";
import { settingsTable } from "./settings-text";

/**
 * The command lines of a help's USAGE section (`a2a-node ...` or `sudo a2a-node ...`), each with the lines it
 * runs on to joined, and without the prose that may follow them.
 */
function usageLines(help: string): string[] {
  const lines = help.split("\n");
  const out: string[] = [];
  let open = false;
  for (const line of lines.slice(lines.indexOf("USAGE") + 1)) {
    if (/^[A-Z][A-Z ()a-z]*$/.test(line)) break;
    const text = line.trim();
    if (/^(sudo )?a2a-node /.test(text)) {
      out.push(text);
      open = true;
    } else if (open && text && /^ {4,}/.test(line)) out[out.length - 1] += ` ${text}`;
    else open = false;
  }
  return out;
}

function flagText(name: string, spec: FlagSpec): string {
  const value = spec.type === "boolean" ? "" : ` ${spec.value ?? "VALUE"}`;
  const notes = [
    spec.type === "list" ? "repeatable" : "",
    spec.choices && !spec.value?.includes("|") ? `one of ${spec.choices.join(", ")}` : "",
  ].filter(Boolean);
  return `\`--${name}${value}\`${notes.length ? ` (${notes.join("; ")})` : ""}`;
}

function flagList(flags: Record<string, FlagSpec>): string {
  const entries = Object.entries(flags);
  return entries.length
    ? `Flags: ${entries.map(([n, s]) => flagText(n, s)).join(", ")}.`
    : "Flags: none beyond `--home` and `--help`.";
}

const fence = (lines: string[]) => ["```", ...lines, "```"].join("\n");
const oneLine = (text: string) =>
  text
    .split("\n")
    .map((l) => l.trim())
    .join(" ");
const sentence = (text: string) => `${text[0].toUpperCase()}${text.slice(1)}${/[.)]$/.test(text) ? "" : "."}`;

/** `a2a-node help commands`: every command and subcommand, its usage and its flags. */
export function commandReference(commands: readonly Command[]): string {
  const parts = [
    "# Commands",
    "",
    "Every command and subcommand of `a2a-node`, with its flags: generated from the command registry",
    "(src/cli/registry.ts) and each command's flag specs by `bun scripts/help-reference.ts`; a test keeps this page",
    "identical to what they make. `a2a-node COMMAND [SUBCOMMAND] --help` says what each flag does, with examples.",
    "Every command takes `--home DIR` (the node's home; env `A2A_NODE_HOME`, default `~/.a2a-node`) and `--help`;",
    "every command that prints takes `--json` (one JSON value on stdout, for scripts).",
    "",
    "## Exit codes",
    "",
    "| code | meaning |",
    "|---|---|",
    ...(Object.keys(ExitCode) as (keyof typeof ExitCode)[])
      .sort((a, b) => ExitCode[a] - ExitCode[b])
      .map((k) => `| ${ExitCode[k]} | ${EXIT_CODE_MEANINGS[k]} |`),
    "",
    "A command's own `--help` says which of them it uses, and when (e.g. `pki needs-renewal`'s 0 and 1).",
  ];
  for (const c of commands) {
    parts.push("", `## ${c.name}`, "", `${c.summary[0].toUpperCase()}${c.summary.slice(1)}.`, "");
    if (c.subcommands?.length) {
      for (const sub of c.subcommands) {
        parts.push(`### ${c.name} ${sub.name}`, "", sentence(oneLine(sub.summary)), "");
        parts.push(
          fence(
            sub.usage
              .split("\n")
              .map((l) => l.trim())
              .map((l) => (l.startsWith("sudo ") ? l : `a2a-node ${l}`)),
          ),
          "",
        );
        parts.push(flagList(sub.flags), "");
      }
    } else {
      parts.push(fence(usageLines(c.help)), "", flagList(c.flags), "");
    }
  }
  return `${parts.join("\n").replace(/\n+$/, "")}\n`;
}

/** `a2a-node help settings`: the settings table, with how to read it. */
export function settingsReference(): string {
  return `# Settings

Every setting of \`serve\`, by its config key (in \`HOME/config.toml\`), environment variable and flag: generated from
src/settings/serve-settings.ts by \`bun scripts/help-reference.ts\`; a test keeps this page identical to what the
declarations make. Precedence: defaults < config file < environment < flags; \`a2a-node serve --check\` prints
the effective value of each and where it came from. How the three combine: \`a2a-node help configuration\`.

${settingsTable()}`;
}
