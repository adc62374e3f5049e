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
  },
  discover: { yes: { type: "boolean" }, json: { type: "boolean" } },
  ping: { json: { type: "boolean" } },
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
