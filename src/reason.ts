/** What an error says, for a log line or a refusal: its message, or the thrown value itself when it is no Error. */
export function reasonOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
