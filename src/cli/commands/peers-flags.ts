import { PEER_TIMEOUT_FLAGS } from "../peer-timeouts";

/** Each subcommand's flags: what it parses, and what the help test and shell completion read. */
export const PEERS_FLAGS = {
  add: {
    "key-pin": { type: "string", value: "PIN" },
    fingerprint: { type: "string", value: "SHA256" },
    pin: { type: "boolean" },
    replace: { type: "boolean" },
    auth: { type: "string", value: "KIND", choices: ["bearer", "header", "none"] },
    "token-file": { type: "string", value: "FILE" },
    "header-file": { type: "string", value: "FILE" },
    ca: { type: "string", value: "FILE" },
    "insecure-http": { type: "boolean" },
    json: { type: "boolean" },
    ...PEER_TIMEOUT_FLAGS,
  },
  discover: { yes: { type: "boolean" }, json: { type: "boolean" }, ...PEER_TIMEOUT_FLAGS },
  ping: { json: { type: "boolean" }, ...PEER_TIMEOUT_FLAGS },
  list: { json: { type: "boolean" } },
  show: { json: { type: "boolean" } },
  remove: { json: { type: "boolean" } },
} as const;

/** A peer's pin as `peers list` and `discover` say it. */
export function pinText(p: { keyPin?: string; fingerprint?: string }): string {
  if (p.keyPin) return `key pinned ${p.keyPin}`;
  if (p.fingerprint) return `certificate pinned ${p.fingerprint} (older pin: converted to a key pin on next contact)`;
  return "not pinned";
}
