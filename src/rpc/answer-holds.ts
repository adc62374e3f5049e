import type { AnswerHold, CallContext } from "./caller";

/**
 * Answers at least this long (in UTF-16 units, so at least this many bytes) are counted against the caller's
 * answer budget while they wait to be read. Smaller ones are not: the HTTP loop stops reading a connection
 * whose client leaves 64 KiB of answers unread, so each connection holds at most one of them.
 */
export const COUNTED_ANSWER_CHARS = 16 * 1024;

/** A serialised answer, and the hold its bytes are counted under (absent for a small one, or where nothing counts). */
export interface HeldText {
  text: string;
  hold?: AnswerHold;
}

/**
 * Counts a serialised answer against the caller's budget, right where it was built, before anything else
 * runs: an answer that does not fit is dropped at once (the error says why) instead of waiting in memory for
 * a client that does not read. Throws the holder's refusal.
 */
export function holdAnswer(ctx: CallContext, text: string): HeldText {
  if (!ctx.answers || text.length < COUNTED_ANSWER_CHARS) return { text };
  const hold = ctx.answers.hold(Buffer.byteLength(text));
  if (!hold) throw ctx.answers.refusal();
  return { text, hold };
}

/**
 * The same count for an answer already encoded (a gRPC message): `bytes` of it held against the caller's
 * budget until written; nothing for a small one. Throws the holder's refusal.
 */
export function holdBytes(ctx: CallContext, bytes: number): AnswerHold | undefined {
  if (!ctx.answers || bytes < COUNTED_ANSWER_CHARS) return undefined;
  const hold = ctx.answers.hold(bytes);
  if (!hold) throw ctx.answers.refusal();
  return hold;
}
