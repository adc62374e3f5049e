/** Prints the README's settings table from the settings declarations: bun scripts/settings-table.ts */
import { settingsTable } from "../src/cli/settings-text";

process.stdout.write(settingsTable());
