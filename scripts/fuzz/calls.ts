/**
 * Well-formed calls the fuzzer itself makes, outside the counted inputs: the task pools and webhooks made at
 * warm-up, and the liveness check after the run. They go over the same raw connections as the inputs.
 */
import { encode } from "./http-request";
import type { FuzzInput, Listener } from "./input";
import { send, type Endpoint } from "./wire";

export async function call(
  listener: Listener,
  e: Endpoint,
  envelope: object,
  version: string | null = "1.0",
): Promise<{ status: number; text: string; json: any }> {
  const headers: [string, string][] = [
    ["Host", `127.0.0.1:${e.port}`],
    ["Content-Type", "application/json"],
  ];
  if (version) headers.push(["A2A-Version", version]);
  const bytes = encode({
    method: "POST",
    target: "/",
    version: "HTTP/1.1",
    headers,
    body: Buffer.from(JSON.stringify(envelope)),
    framing: "length",
  });
  return exchange(listener, e, bytes, "POST");
}

/** A plain GET of one of the node's routes (health, metrics), over the same raw connections. */
export function get(
  listener: Listener,
  e: Endpoint,
  path: string,
): Promise<{ status: number; text: string; json: any }> {
  const bytes = encode({
    method: "GET",
    target: path,
    version: "HTTP/1.1",
    headers: [["Host", `127.0.0.1:${e.port}`]],
    body: Buffer.alloc(0),
    framing: "none",
  });
  return exchange(listener, e, bytes, "GET");
}

async function exchange(
  listener: Listener,
  e: Endpoint,
  bytes: Buffer,
  method: string,
): Promise<{ status: number; text: string; json: any }> {
  const input: FuzzInput = {
    index: -1,
    listener,
    family: "jsonrpc",
    labels: [],
    pieces: [{ bytes, pauseMs: 0 }],
    transport: listener === "mtls" ? "tls" : "tcp",
    methods: [method],
    responses: 1,
    expect: "answer",
  };
  const o = await send(input, [bytes], e, { quietMs: 15_000, lateWatchMs: 0 });
  const a = o.answers[0];
  if (!a) throw new Error(`no answer from the ${listener} listener (${o.end}${o.error ? `, ${o.error}` : ""})`);
  const text = a.body.toString("utf8");
  let json: any;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: a.status, text, json };
}

export const userMessage = (messageId: string, text: string) => ({ messageId, role: "ROLE_USER", parts: [{ text }] });
