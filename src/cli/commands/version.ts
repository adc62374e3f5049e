import { VERSION } from "../../version";
import type { Command } from "../command";
import { parseFlags } from "../flags";

const flags = { json: { type: "boolean" } } as const;

export const versionCommand: Command = {
  name: "version",
  summary: "print the version of this binary",
  help: `Print the version of this binary.

USAGE
  a2a-node version [--json]

FLAGS
  --json   print {"version": ..., "bun": ...} on one line

EXAMPLES
  a2a-node version

EXIT CODES
  0 always
`,
  flags,
  async run(argv, { io }) {
    const { flags: f } = parseFlags(argv, flags);
    io.stdout.write(f.json ? `${JSON.stringify({ version: VERSION, bun: Bun.version })}\n` : `a2a-node ${VERSION}\n`);
    return 0;
  },
};
