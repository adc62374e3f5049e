import {
  type HermesCapabilities,
  HermesHttpError,
  type HistoryTurn,
  type RunsApi,
  type SessionMessage,
} from "./runs-api";

/*
 * Continuing an A2A conversation on Hermes, on both server generations. Every task of one context runs with the
 * same session_id (see sessionId()), and Hermes keeps each session's messages in its SessionDB either way; what
 * differs is who reads them back:
 * - the newer server loads a run's history by its session_id itself (api_server_runs.py `_handle_runs`:
 *   `_conversation_history_for_session(session_id)` when the body has no conversation_history); it is the
 *   generation with idempotent runs, and its GET /v1/capabilities says `features.runs_idempotency`
 *   (`_idempotency_capabilities`);
 * - the older one (runs code inside api_server.py, e.g. 0.18.2 @ 306e2d23) takes session_id as a label only: a
 *   run sees earlier turns only from `conversation_history` (or previous_response_id, which runs never store).
 *   Its capabilities have no runs_idempotency. There this node reads the session's messages
 *   (GET /api/sessions/{id}/messages, the same rows the newer server loads) and sends them along.
 * A caller-supplied conversation_history is authoritative on the newer server too, so sending it there would
 * also work, but would drop what Hermes keeps beyond the text (tool calls and their results).
 */

/** How long what /v1/capabilities said is trusted: an upgraded Hermes is noticed within this. */
const CAPABILITIES_TTL_MS = 5 * 60_000;
/** Each of the two reads below is bounded on its own: it only prepares the run. */
const READ_TIMEOUT_MS = 10_000;
/** Most earlier turns sent (newest kept): well under the server's 10 MB body limit, which Hermes compresses further. */
const MAX_TURNS = 400;
const MAX_CHARS = 1_000_000;

/** What a run needs, besides its session_id, to continue its conversation. */
export interface Continuation {
  /** The earlier turns, for a server that does not load them itself. */
  history?: HistoryTurn[];
  /** Set when the earlier turns could not be read: said to the person, and the run starts without them. */
  lost?: string;
}

export class Conversations {
  private known: { bySession: boolean; until: number } | undefined;

  constructor(private readonly api: RunsApi) {}

  /**
   * Whether the server loads a run's history by session_id (the newer generation). An answer other than a
   * refused key counts as "no" and is asked again next time: sending the history works on both generations.
   */
  async loadsBySession(signal: AbortSignal): Promise<boolean> {
    const known = this.known;
    if (known && known.until > Date.now()) return known.bySession;
    let caps: HermesCapabilities;
    try {
      caps = await this.api.capabilities(bounded(signal));
    } catch (err) {
      if (signal.aborted || refusedKey(err)) throw err;
      return false;
    }
    const idempotency = caps.features?.runs_idempotency;
    const bySession =
      idempotency === true ||
      (typeof idempotency === "object" &&
        idempotency !== null &&
        (idempotency as { supported?: unknown }).supported !== false);
    this.known = { bySession, until: Date.now() + CAPABILITIES_TTL_MS };
    return bySession;
  }

  /** The history to send with a run of `sessionId`: none on a server that loads it itself. */
  async continuation(sessionId: string, signal: AbortSignal): Promise<Continuation> {
    if (await this.loadsBySession(signal)) return {};
    let messages: SessionMessage[];
    try {
      messages = await this.api.sessionMessages(sessionId, bounded(signal));
    } catch (err) {
      if (signal.aborted || refusedKey(err)) throw err;
      return {
        lost: `Hermes at ${this.api.base} did not give this conversation's earlier turns (${(err as Error).message})`,
      };
    }
    const history = turnsOf(messages);
    return history.length > 0 ? { history } : {};
  }
}

/**
 * The user and assistant turns with text, newest kept within the bounds. Tool calls and tool results stay out:
 * conversation_history carries role and content only, and a tool result without its call is refused by models.
 */
export function turnsOf(messages: SessionMessage[]): HistoryTurn[] {
  const out: HistoryTurn[] = [];
  let chars = 0;
  for (let i = messages.length - 1; i >= 0 && out.length < MAX_TURNS; i--) {
    const m = messages[i]!;
    if (m.role !== "user" && m.role !== "assistant") continue;
    const content = textOf(m.content).trim();
    if (!content) continue;
    if (chars + content.length > MAX_CHARS) break;
    chars += content.length;
    out.push({ role: m.role, content });
  }
  return out.reverse();
}

function textOf(content: unknown): string {
  if (typeof content === "string") return content;
  if (Array.isArray(content))
    return content
      .map((p) =>
        typeof p === "string"
          ? p
          : p && typeof p === "object" && typeof (p as { text?: unknown }).text === "string"
            ? (p as { text: string }).text
            : "",
      )
      .filter(Boolean)
      .join(" ");
  return "";
}

function refusedKey(err: unknown): boolean {
  return err instanceof HermesHttpError && (err.status === 401 || err.status === 403);
}

function bounded(signal: AbortSignal): AbortSignal {
  return AbortSignal.any([signal, AbortSignal.timeout(READ_TIMEOUT_MS)]);
}
