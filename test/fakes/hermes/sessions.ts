/**
 * The fake Hermes's SessionDB: the messages each session keeps (hermes_state.py `SessionDB`, a file in
 * HERMES_HOME, so it outlives gateway restarts). A run appends its user message as it starts, then the assistant's
 * tool calls, the tool results and the final answer. GET /api/sessions/{id}/messages reads the rows
 * (`_handle_session_messages`); the newer server also loads them as a run's history
 * (`get_messages_as_conversation`), the older one never does on /v1/runs.
 */
import { nowSeconds } from "./wire";

export interface SessionRow {
  id: number;
  session_id: string;
  role: "user" | "assistant" | "tool";
  content: string | null;
  tool_call_id: string | null;
  tool_calls: unknown[] | null;
  tool_name: string | null;
  timestamp: number;
  token_count: null;
  finish_reason: string | null;
  reasoning: null;
  reasoning_content: null;
}

export class SessionDb {
  private nextId = 1;
  private readonly rows = new Map<string, SessionRow[]>();

  append(
    sessionId: string,
    row: Pick<SessionRow, "role" | "content"> &
      Partial<Pick<SessionRow, "tool_call_id" | "tool_calls" | "tool_name" | "finish_reason">>,
  ): void {
    const list = this.rows.get(sessionId) ?? [];
    list.push({
      id: this.nextId++,
      session_id: sessionId,
      role: row.role,
      content: row.content,
      tool_call_id: row.tool_call_id ?? null,
      tool_calls: row.tool_calls ?? null,
      tool_name: row.tool_name ?? null,
      timestamp: nowSeconds(),
      token_count: null,
      finish_reason: row.finish_reason ?? null,
      reasoning: null,
      reasoning_content: null,
    });
    this.rows.set(sessionId, list);
  }

  has(sessionId: string): boolean {
    return this.rows.has(sessionId);
  }

  /** The rows as GET /api/sessions/{id}/messages gives them. */
  messages(sessionId: string): SessionRow[] {
    return structuredClone(this.rows.get(sessionId) ?? []);
  }

  /** `get_messages_as_conversation`: role and content (and the tool fields), what the newer server loads. */
  conversation(sessionId: string): { role: string; content: string }[] {
    return (this.rows.get(sessionId) ?? []).map((r) => ({ role: r.role, content: r.content ?? "" }));
  }
}
