import { normalizeNodeName } from "../../pki/names";
import { normalizePeerUrl, PeerUrlError } from "../client/peer-url";
import type { CommandContext } from "./command";
import { UsageError } from "./errors";

/** A peer name as typed → the name as certificates carry it; a changed spelling is said on stderr. */
export function peerName(typed: string, ctx: CommandContext): string {
  let name: string;
  try {
    name = normalizeNodeName(typed);
  } catch (err) {
    throw new UsageError(
      `'${typed}' is not a valid peer name: ${(err as Error).message.replace(/^invalid name "[^"]*": /, "")}`,
    );
  }
  if (name !== typed)
    ctx.io.stderr.write(`note: peer names are lower case, as init-pki issues them: '${typed}' is added as '${name}'\n`);
  return name;
}

/** A peer URL as typed → https://HOST:PORT; what was filled in is said on stderr. */
export function peerUrl(typed: string, ctx: CommandContext): string {
  try {
    const { url, note } = normalizePeerUrl(typed);
    if (note) ctx.io.stderr.write(`note: ${note}\n`);
    return url;
  } catch (err) {
    if (err instanceof PeerUrlError) throw new UsageError(err.message);
    throw err;
  }
}
