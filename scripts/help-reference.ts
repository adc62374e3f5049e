/**
 * Writes the generated pages of the manual: src/help/topics/commands.md (from the command registry) and
 * src/help/topics/settings.md (from the settings declarations). Run it after changing a command, a flag or a
 * setting: bun scripts/help-reference.ts (test/help/reference.test.ts fails until the pages match).
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { COMMANDS } from "../src/cli/registry";
import { commandReference, settingsReference } from "../src/cli/reference";

const topics = join(import.meta.dir, "..", "src", "help", "topics");
const commands = await Promise.all(COMMANDS.map((c) => c.load()));
writeFileSync(join(topics, "commands.md"), commandReference(commands));
writeFileSync(join(topics, "settings.md"), settingsReference());
console.log(`wrote ${join(topics, "commands.md")} and settings.md`);
