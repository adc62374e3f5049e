import { existsSync } from "node:fs";
import { giveToHomeOwner, homePaths } from "../../../home";
import { normalizeNodeName } from "../../../../pki/names";
import { openDatabase } from "../../../store/database";
import { SqliteCallerTokens } from "../../../store/sqlite-caller-tokens";
import { CliError, ExitCode, UsageError } from "../../errors";

/** The home's caller tokens, for the `tokens` subcommands; close() when done. */
export function openTokens(home: string): { tokens: SqliteCallerTokens; close(): void } {
  const paths = homePaths(home);
  if (!existsSync(paths.root))
    throw new CliError(
      `no a2a-node home at ${home}`,
      ExitCode.NotFound,
      "run 'a2a-node init-pki --name NAME' first, or pass --home",
    );
  const database = openDatabase(paths.database);
  giveToHomeOwner(paths.root, [paths.database, `${paths.database}-wal`, `${paths.database}-shm`]);
  return { tokens: new SqliteCallerTokens(database.db), close: () => database.close() };
}

/** A caller name as typed → as kept (lower case, the node-name alphabet), or a usage error saying why. */
export function callerName(typed: string | undefined): string {
  if (!typed) throw new UsageError("a caller NAME is needed (letters, digits and dashes, e.g. hermes)");
  try {
    return normalizeNodeName(typed);
  } catch (err) {
    throw new UsageError(
      `'${typed}' is not a valid caller name: ${(err as Error).message.replace(/^invalid name "[^"]*": /, "")}`,
    );
  }
}
