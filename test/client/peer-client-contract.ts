/**
 * The PeerClient contract, written once and run against both clients (peer-client.contract.test.ts): the JSON-RPC
 * client and the HTTP+JSON client, each against a real node started in-process (over mutual TLS, the conformance
 * executor behind it, so a task can complete, wait for input, run until canceled or answer with a message). The
 * same calls must give the same results and the same errors, whichever binding carries them: `send` and `status`
 * do not know which one a peer speaks.
 */
import { describe, expect, it } from "vitest";
import { RemoteError, type PeerClient } from "../../src/client/peer-client";
import type { Message, StreamResponse, Task } from "../../src/protocol/types";

export interface PeerClientUnderTest {
  name: string;
  binding: "JSONRPC" | "HTTP+JSON";
  /** A client of the node, as `send` makes it (alpha's identity, beta's name expected). */
  client(): PeerClient;
}

/** A message that plays one of the conformance executor's scenarios (chosen by its messageId prefix). */
export function scenario(prefix: string, text = "contract", extra: Partial<Message> = {}): Message {
  return { messageId: `${prefix}-${crypto.randomUUID()}`, role: "ROLE_USER", parts: [{ text }], ...extra };
}

/** What a task says, without what differs between two runs (ids, times). */
function shape(task: Task) {
  return {
    state: task.status.state,
    message: task.status.message?.parts.map((p) => p.text),
    artifacts: task.artifacts?.map((a) => a.parts),
  };
}

/** A stream's items, each by its kind and the state or text it carries. */
function kinds(items: StreamResponse[]): string[] {
  return items.map((i) => {
    if ("task" in i) return `task ${i.task.status.state}`;
    if ("statusUpdate" in i) return `status ${i.statusUpdate.status.state}`;
    if ("artifactUpdate" in i) return `artifact ${i.artifactUpdate.artifact.parts.map((p) => p.text).join("")}`;
    return "message";
  });
}

async function collect(stream: AsyncIterable<StreamResponse>): Promise<StreamResponse[]> {
  const items: StreamResponse[] = [];
  for await (const item of stream) items.push(item);
  return items;
}

async function remoteError(call: Promise<unknown>): Promise<{ code: number; message: string }> {
  const err = await call.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(RemoteError);
  return { code: (err as RemoteError).code, message: (err as RemoteError).message };
}

export function peerClientContract(subject: PeerClientUnderTest): void {
  describe(`PeerClient contract: ${subject.name}`, () => {
    it(`speaks ${subject.binding}, protocol 1.0`, () => {
      const c = subject.client();
      expect(c.binding).toBe(subject.binding);
      expect(c.protocol).toBe("1.0");
    });

    it("sendMessage (blocking) returns the completed task; getTask and listTasks return the same task", async () => {
      const c = subject.client();
      const sent = await c.sendMessage({ message: scenario("tck-artifact-text") });
      expect("task" in sent).toBe(true);
      const task = (sent as { task: Task }).task;
      expect(shape(task)).toEqual({
        state: "TASK_STATE_COMPLETED",
        message: undefined,
        artifacts: [[{ text: "Generated text content" }]],
      });
      expect(shape(await c.getTask({ id: task.id }))).toEqual(shape(task));
      const listed = await c.listTasks({ contextId: task.contextId, includeArtifacts: true });
      expect(listed.tasks.map((t) => [t.id, shape(t)])).toEqual([[task.id, shape(task)]]);
    });

    it("sendMessage answered with a message returns that message", async () => {
      const sent = await subject.client().sendMessage({ message: scenario("tck-message-response") });
      expect("message" in sent && sent.message.parts).toEqual([{ text: "Direct message response" }]);
    });

    it("a task waiting for input, then continued with a follow-up message, completes", async () => {
      const c = subject.client();
      const asked = (await c.sendMessage({ message: scenario("tck-input-required") })) as { task: Task };
      expect(shape(asked.task).state).toBe("TASK_STATE_INPUT_REQUIRED");
      const next = { taskId: asked.task.id, contextId: asked.task.contextId };
      const done = (await c.sendMessage({ message: scenario("tck-complete-task", "more", next) })) as { task: Task };
      expect(done.task.id).toBe(asked.task.id);
      expect(shape(done.task).state).toBe("TASK_STATE_COMPLETED");
    });

    it("sendStreamingMessage streams the task, its start and progress, the artifact and the end, in order", async () => {
      const items = await collect(subject.client().sendStreamingMessage({ message: scenario("tck-stream-001") }));
      expect(kinds(items)).toEqual([
        "task TASK_STATE_SUBMITTED",
        "status TASK_STATE_WORKING",
        "status TASK_STATE_WORKING",
        "artifact Stream hello from TCK",
        "status TASK_STATE_COMPLETED",
      ]);
    });

    it("subscribeToTask follows a running task; cancelTask ends it CANCELED, and the stream with it", async () => {
      const c = subject.client();
      const started = (await c.sendMessage({
        message: scenario("test-resubscribe-message-id"),
        configuration: { returnImmediately: true },
      })) as { task: Task };
      const id = started.task.id;
      let opened!: () => void;
      const subscribed = new Promise<void>((resolve) => (opened = resolve));
      const following = collect(c.subscribeToTask(id, undefined, opened));
      await subscribed;
      const canceled = await c.cancelTask(id);
      expect(canceled.status.state).toBe("TASK_STATE_CANCELED");
      const items = await following;
      expect(kinds(items)[0]).toMatch(/^task TASK_STATE_(SUBMITTED|WORKING)$/);
      expect(kinds(items).at(-1)).toBe("status TASK_STATE_CANCELED");
    });

    it("the node's errors come back as RemoteError with the same code and words", async () => {
      const c = subject.client();
      expect(await remoteError(c.getTask({ id: "01NOSUCHTASK0000000000000" }))).toEqual({
        code: -32001,
        message: "Task not found: 01NOSUCHTASK0000000000000",
      });
      const done = (await c.sendMessage({ message: scenario("tck-complete-task") })) as { task: Task };
      const notCancelable = await remoteError(c.cancelTask(done.task.id));
      expect(notCancelable.code).toBe(-32002);
      expect(notCancelable.message).toContain(done.task.id);
      const invalid = await remoteError(c.sendMessage({ message: { ...scenario("tck-complete-task"), parts: [] } }));
      expect(invalid.code).toBe(-32602);
    });
  });
}

/**
 * The errors both clients gave, for the test file to compare across bindings. A field is named from the body
 * each binding sent: JSON-RPC's envelope puts the message under `params.`, HTTP+JSON's body is the params.
 */
export async function errorWords(client: PeerClient): Promise<string[]> {
  const words: string[] = [];
  for (const call of [
    client.getTask({ id: "01NOSUCHTASK0000000000000" }),
    client.sendMessage({ message: { ...scenario("tck-complete-task"), parts: [] } }),
  ]) {
    const { code, message } = await remoteError(call);
    words.push(`${code} ${message.replace(/\bparams\./g, "")}`);
  }
  return words;
}
