/**
 * What the bench sends and how it checks answers; shared by the load client and the orchestrator so that
 * every server is judged by the same rules.
 */
import { readFileSync } from "node:fs";

/** The JSON bundle `a2a-node pki issue` writes. */
export interface Bundle {
  name: string;
  caCert: string;
  cert: string;
  key: string;
}

export function readBundle(path: string): Bundle {
  return JSON.parse(readFileSync(path, "utf8")) as Bundle;
}

export type ClientTls = ReturnType<typeof clientTls>;

/** Bun's fetch TLS options for presenting `bundle`'s identity and trusting only the fleet CA. */
export function clientTls(bundle: Bundle) {
  return { cert: bundle.cert, key: bundle.key, ca: bundle.caCert };
}

/** A SendMessage request whose text is derived from its unique messageId, so each answer can be matched. */
export function sendMessageBody(messageId: string, rpcId: number): { body: string; text: string } {
  const text = `echo ${messageId}`;
  const body = JSON.stringify({
    jsonrpc: "2.0",
    id: rpcId,
    method: "SendMessage",
    params: { message: { messageId, role: "ROLE_USER", parts: [{ text }] } },
  });
  return { body, text };
}

export const RPC_HEADERS = { "content-type": "application/json", "A2A-Version": "1.0" };
const REST_HEADERS = { "content-type": "application/a2a+json", accept: "application/a2a+json", "A2A-Version": "1.0" };

/** Which A2A binding a load speaks: JSON-RPC (POST /) or HTTP+JSON (POST /message:send). */
export type Binding = "jsonrpc" | "http-json";

/** The same SendMessage in either binding: where it goes, with which headers and body. */
export function sendMessageRequest(binding: Binding, base: string, messageId: string, rpcId: number) {
  const { body, text } = sendMessageBody(messageId, rpcId);
  if (binding === "jsonrpc") return { url: base, headers: RPC_HEADERS, body, text };
  return {
    url: new URL("/message:send", base).toString(),
    headers: REST_HEADERS,
    body: JSON.stringify(JSON.parse(body).params),
    text,
  };
}

/**
 * Every answer is checked in full (a JSON.parse of half a kilobyte costs the client a few microseconds): it
 * must be a COMPLETED task whose artifact echoes exactly the text sent. Returns an error message, or
 * undefined when the answer is right.
 */
export function checkAnswer(
  status: number,
  body: string,
  text: string,
  binding: Binding = "jsonrpc",
): string | undefined {
  if (status !== 200) return `HTTP ${status}: ${body.slice(0, 200)}`;
  let task: any;
  try {
    const answer = JSON.parse(body);
    task = binding === "jsonrpc" ? answer?.result?.task : answer?.task;
  } catch {
    return `answer is not JSON: ${body.slice(0, 200)}`;
  }
  if (!task?.id) return `answer has no task: ${body.slice(0, 300)}`;
  if (task.status?.state !== "TASK_STATE_COMPLETED")
    return `task state is ${task.status?.state}, not TASK_STATE_COMPLETED`;
  const echoed = task.artifacts?.[0]?.parts?.[0]?.text;
  if (echoed !== text) return `artifact text is ${JSON.stringify(echoed)}, expected ${JSON.stringify(text)}`;
  return undefined;
}
