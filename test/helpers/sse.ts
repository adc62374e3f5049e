import type { TlsIdentity } from "./fleet";

/** One server-sent event: its `id:` and `event:` (if any) and its `data:` parsed as JSON. */
export interface SseEvent {
  id?: string;
  event?: string;
  data: any;
}

export interface SseConnection {
  status: number;
  headers: Headers;
  /** The next event, or undefined once the server ended the stream. */
  next(): Promise<SseEvent | undefined>;
  /** Every remaining event until the server ends the stream. */
  rest(): Promise<SseEvent[]>;
  /** Like rest(), but a connection cut by the server is reported instead of thrown, with what came before. */
  settle(): Promise<{ events: SseEvent[]; error?: string }>;
  /** Drops the connection (as a client that goes away). */
  close(): void;
  /** The whole body of an answer that is no event stream (a refusal); undefined for a stream. */
  text?: string;
}

let rpcId = 1000;

/**
 * POSTs a JSON-RPC streaming request over mTLS with a raw fetch and reads the answer as server-sent events;
 * the test sees every `id:` and can drop the connection at any point.
 */
export function openSse(
  url: string,
  who: TlsIdentity,
  method: string,
  params: unknown,
  headers: Record<string, string> = {},
): Promise<SseConnection> {
  return openSseRequest(url, who, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "text/event-stream", "a2a-version": "1.0", ...headers },
    body: JSON.stringify({ jsonrpc: "2.0", id: rpcId++, method, params }),
  });
}

/** Any request over mTLS (an HTTP+JSON route, say) whose answer is read as server-sent events. */
export async function openSseRequest(
  url: string,
  who: TlsIdentity,
  init: { method: string; headers: Record<string, string>; body?: string },
): Promise<SseConnection> {
  const abort = new AbortController();
  const res = await fetch(url, {
    ...init,
    signal: abort.signal,
    tls: { cert: who.cert, key: who.key, ca: who.ca },
  } as RequestInit);
  if (!(res.headers.get("content-type") ?? "").includes("text/event-stream")) {
    const text = await res.text();
    const none = async () => undefined;
    return {
      status: res.status,
      headers: res.headers,
      text,
      next: none,
      rest: async () => [],
      settle: async () => ({ events: [] }),
      close() {},
    };
  }
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  let ended = false;

  const next = async (): Promise<SseEvent | undefined> => {
    for (;;) {
      const cut = buffer.indexOf("\n\n");
      if (cut !== -1) {
        const block = buffer.slice(0, cut);
        buffer = buffer.slice(cut + 2);
        let id: string | undefined;
        let event: string | undefined;
        const data: string[] = [];
        for (const line of block.split("\n")) {
          if (line.startsWith("id:")) id = line.slice(3).trim();
          else if (line.startsWith("event:")) event = line.slice(6).trim();
          else if (line.startsWith("data:")) data.push(line.slice(5).replace(/^ /, ""));
        }
        if (data.length === 0) continue; // a comment / keep-alive
        return event === undefined
          ? { id, data: JSON.parse(data.join("\n")) }
          : { id, event, data: JSON.parse(data.join("\n")) };
      }
      if (ended) return undefined;
      const { value, done } = await reader.read();
      if (done) {
        ended = true;
        buffer += decoder.decode();
        if (buffer.trim() === "") return undefined;
        buffer += "\n\n";
      } else buffer += decoder.decode(value, { stream: true });
    }
  };

  return {
    status: res.status,
    headers: res.headers,
    next,
    async rest() {
      const out: SseEvent[] = [];
      for (let e = await next(); e; e = await next()) out.push(e);
      return out;
    },
    async settle() {
      const events: SseEvent[] = [];
      try {
        for (let e = await next(); e; e = await next()) events.push(e);
        return { events };
      } catch (err) {
        return { events, error: (err as Error).message };
      }
    },
    close() {
      ended = true;
      abort.abort();
      reader.cancel().catch(() => {});
    },
  };
}
