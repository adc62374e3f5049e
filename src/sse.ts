/* A server-sent-event reader shared by both sides: the peer clients read A2A streams, executors read model servers'. */

/**
 * Reads a server-sent-event stream and yields each event's data (multi-line data joined with "\n").
 * Comments and other fields are skipped; the events of model servers (OpenAI-compatible) need no more.
 */
export async function* readSse(body: ReadableStream<Uint8Array>): AsyncIterable<string> {
  for await (const e of readNamedSse(body)) yield e.data;
}

/** Each event of a server-sent-event stream with its `event:` name (Hermes runs name their events). */
export async function* readNamedSse(body: ReadableStream<Uint8Array>): AsyncIterable<{ event: string; data: string }> {
  const decoder = new TextDecoder();
  let buf = "";
  let data: string[] = [];
  let event = "message";
  for await (const chunk of body as unknown as AsyncIterable<Uint8Array>) {
    buf += decoder.decode(chunk, { stream: true });
    let nl: number;
    while ((nl = buf.indexOf("\n")) !== -1) {
      let line = buf.slice(0, nl);
      buf = buf.slice(nl + 1);
      if (line.endsWith("\r")) line = line.slice(0, -1);
      if (line === "") {
        if (data.length) yield { event, data: data.join("\n") };
        data = [];
        event = "message";
      } else if (line.startsWith("data:")) data.push(line.slice(line[5] === " " ? 6 : 5));
      else if (line.startsWith("event:")) event = line.slice(line[6] === " " ? 7 : 6);
    }
  }
  if (data.length) yield { event, data: data.join("\n") };
}
