/** A peer's pin as `peers list` and `discover` say it. */
export function pinText(p: { keyPin?: string; fingerprint?: string }): string {
  if (p.keyPin) return `key pinned ${p.keyPin}`;
  if (p.fingerprint) return `certificate pinned ${p.fingerprint} (older pin: converted to a key pin on next contact)`;
  return "not pinned";
}
