/**
 * The four bounds on a call to a peer (client/deadlines.ts) as flags of every command that calls one. They
 * are serve's settings peer_*_seconds too, so config.toml and A2A_NODE_PEER_* set them for every command, and
 * the flag, when given, wins (the same precedence as serve's).
 */
import type { FlagSpec } from "./flags";

export const PEER_TIMEOUT_FLAGS = {
  "peer-connect-timeout": { type: "number", value: "SECONDS" },
  "peer-handshake-timeout": { type: "number", value: "SECONDS" },
  "peer-answer-timeout": { type: "number", value: "SECONDS" },
  "peer-stream-idle": { type: "number", value: "SECONDS" },
} as const satisfies Record<string, FlagSpec>;

/** The help's lines for them, under FLAGS. */
export const PEER_TIMEOUT_HELP = `  --peer-connect-timeout S     give up on a peer that takes no connection within S seconds (default 10)
  --peer-handshake-timeout S   ... that takes it and does not finish the TLS handshake within S (default 10)
  --peer-answer-timeout S      ... whose answer has not come whole within S (default 30)
  --peer-stream-idle S         an event stream silent for S, keep-alives included, is taken as cut (default 60)
                               (also peer_*_seconds in config.toml, or A2A_NODE_PEER_*; a timeout says which
                               step it was, exit 4 before the handshake, 5 after it)`;

/** Just these flags, by flag name as resolveSettings reads them, from a command's parsed flags. */
export function peerTimeoutFlags(parsed: Record<string, unknown>): Record<string, number | undefined> {
  const out: Record<string, number | undefined> = {};
  for (const name of Object.keys(PEER_TIMEOUT_FLAGS))
    if (typeof parsed[name] === "number") out[name] = parsed[name] as number;
  return out;
}
