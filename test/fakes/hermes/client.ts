/**
 * A raw client for the tests of the fake Hermes server: plain fetch, and an SSE reader that shows every block
 * as the bytes came (data frames and `:` comments alike), so a test can pin the exact wire format and tell a
 * clean end from a cut connection.
 */

export interface RawAnswer {
  status: number;
  headers: Headers;
  text: string;
  json: any;
}

export async function call(
  url: string,
  method: string,
  path: string,
  opts: { key?: string; body?: unknown; raw?: string; headers?: Record<string, string> } = {},
): Promise<RawAnswer> {
  const headers: Record<string, string> = {
    ...(opts.key ? { authorization: `Bearer ${opts.key}` } : {}),
    ...opts.headers,
  };
  let body: string | undefined = opts.raw;
  if (opts.body !== undefined && method !== "GET") {
    body = JSON.stringify(opts.body);
    headers["content-type"] = "application/json";
  }
  const res = await fetch(url + path, { method, headers, body });
  const text = await res.text();
  let json: any;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: res.status, headers: res.headers, text, json };
}

/** One SSE block: a `data:` frame (its JSON parsed) or a comment line. */
export interface Block {
  raw: string;
  data?: any;
  comment?: string;
}

export interface RawEvents {
  status: number;
  headers: Headers;
  /** A non-200 answer's body. */
  body?: any;
  /** The next block; undefined at a clean end; throws when the connection is cut. */
  next(): Promise<Block | undefined>;
  /** Blocks until the clean end. */
  rest(): Promise<Block[]>;
  /** The next data frame, skipping comments. */
  nextData(): Promise<any>;
  close(): void;
}

export async function openEvents(url: string, runId: string, key?: string): Promise<RawEvents> {
  const abort = new AbortController();
  const res = await fetch(`${url}/v1/runs/${runId}/events`, {
    headers: key ? { authorization: `Bearer ${key}` } : {},
    signal: abort.signal,
  });
  if (res.status !== 200) {
    const text = await res.text();
    return {
      status: res.status,
      headers: res.headers,
      body: JSON.parse(text),
      next: async () => undefined,
      rest: async () => [],
      nextData: async () => undefined,
      close: () => {},
    };
  }
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  const next = async (): Promise<Block | undefined> => {
    for (;;) {
      const cut = buffer.indexOf("\n\n");
      if (cut !== -1) {
        const raw = buffer.slice(0, cut + 2);
        buffer = buffer.slice(cut + 2);
        const line = raw.slice(0, -2);
        if (line.startsWith(":")) return { raw, comment: line };
        if (!line.startsWith("data: ") || line.includes("\n"))
          throw new Error(`not a data-only frame: ${JSON.stringify(raw)}`);
        return { raw, data: JSON.parse(line.slice(6)) };
      }
      const { value, done } = await reader.read();
      if (done) {
        if (buffer !== "") throw new Error(`stream ended inside a frame: ${JSON.stringify(buffer)}`);
        return undefined;
      }
      buffer += decoder.decode(value, { stream: true });
    }
  };
  return {
    status: res.status,
    headers: res.headers,
    next,
    async rest() {
      const out: Block[] = [];
      for (let b = await next(); b; b = await next()) out.push(b);
      return out;
    },
    async nextData() {
      for (let b = await next(); b; b = await next()) if (b.data) return b.data;
      return undefined;
    },
    close() {
      abort.abort();
      reader.cancel().catch(() => {});
    },
  };
}
