/**
 * Streams for Hermes's own A2A client (see src/rpc/whole-artifacts.ts): artifact updates held back and
 * sent whole, once, right before the status that settles the task; everything else passes at once.
 */
import { describe, expect, it } from "vitest";
import type { Artifact, StreamItem, TaskState } from "../../src/protocol/types";
import { wholeArtifacts } from "../../src/rpc/whole-artifacts";

const ids = { taskId: "t1", contextId: "c1" };
const status = (state: TaskState, seq?: number): StreamItem => ({
  seq,
  response: { statusUpdate: { ...ids, status: { state } } },
});
const chunk = (artifactId: string, text: string, append: boolean, seq?: number): StreamItem => ({
  seq,
  response: { artifactUpdate: { ...ids, artifact: { artifactId, parts: [{ text }] }, append } },
});

async function all(items: AsyncIterable<StreamItem>): Promise<StreamItem[]> {
  const out: StreamItem[] = [];
  for await (const i of items) out.push(i);
  return out;
}

async function* source(items: StreamItem[]): AsyncIterable<StreamItem> {
  yield* items;
}

const artifactsOf = (items: StreamItem[]): Artifact[] =>
  items.flatMap((i) => ("artifactUpdate" in i.response ? [i.response.artifactUpdate.artifact] : []));

describe("wholeArtifacts", () => {
  it("joins appended chunks, keeps a replacement's text, and sends each artifact once before the settling status", async () => {
    const out = await all(
      wholeArtifacts(
        source([
          { seq: 1, response: { task: { id: "t1", contextId: "c1", status: { state: "TASK_STATE_SUBMITTED" } } } },
          status("TASK_STATE_WORKING", 2),
          chunk("answer", "Checking ", false, 3),
          chunk("answer", "first. ", true, 4),
          {
            seq: 5,
            response: {
              statusUpdate: {
                ...ids,
                status: {
                  state: "TASK_STATE_WORKING",
                  message: { messageId: "m", role: "ROLE_AGENT", parts: [{ text: "running a tool" }] },
                },
              },
            },
          },
          chunk("answer", "Deployed", false, 6),
          chunk("answer", " 1.4.2.", true, 7),
          chunk("notes", "one note", false, 8),
          status("TASK_STATE_COMPLETED", 9),
        ]),
      ),
    );
    const kinds = out.map(
      (i) =>
        Object.keys(i.response)[0] + ("statusUpdate" in i.response ? `:${i.response.statusUpdate.status.state}` : ""),
    );
    expect(kinds).toEqual([
      "task",
      "statusUpdate:TASK_STATE_WORKING",
      "statusUpdate:TASK_STATE_WORKING",
      "artifactUpdate",
      "artifactUpdate",
      "statusUpdate:TASK_STATE_COMPLETED",
    ]);
    expect(artifactsOf(out)).toEqual([
      { artifactId: "answer", parts: [{ text: "Deployed 1.4.2." }] },
      { artifactId: "notes", parts: [{ text: "one note" }] },
    ]);
    const whole = out.filter((i) => "artifactUpdate" in i.response);
    expect(
      whole.map((i) => [
        i.seq,
        "artifactUpdate" in i.response && i.response.artifactUpdate.append,
        "artifactUpdate" in i.response && i.response.artifactUpdate.lastChunk,
      ]),
    ).toEqual([
      [undefined, undefined, true],
      [undefined, undefined, true],
    ]);
    expect(out.at(-1)?.seq).toBe(9);
  });

  it("sends what a task already held with what follows, at a question too, and again only what changed after it", async () => {
    const out = await all(
      wholeArtifacts(
        source([
          {
            response: {
              task: {
                id: "t1",
                contextId: "c1",
                status: { state: "TASK_STATE_WORKING" },
                artifacts: [{ artifactId: "answer", parts: [{ text: "Hello" }] }],
              },
            },
          },
          chunk("answer", " there", true),
          status("TASK_STATE_INPUT_REQUIRED"),
          status("TASK_STATE_WORKING"),
          chunk("answer", ", done", true),
          status("TASK_STATE_COMPLETED"),
        ]),
      ),
    );
    expect(artifactsOf(out).map((a) => a.parts[0].text)).toEqual(["Hello there", "Hello there, done"]);
    expect(out.map((i) => Object.keys(i.response)[0])).toEqual([
      "task",
      "artifactUpdate",
      "statusUpdate",
      "statusUpdate",
      "artifactUpdate",
      "statusUpdate",
    ]);
  });

  it("flushes at the stream's end when no status settled it, and passes return() to its source at once", async () => {
    expect(artifactsOf(await all(wholeArtifacts(source([chunk("a", "x", false), chunk("a", "y", true)]))))).toEqual([
      { artifactId: "a", parts: [{ text: "xy" }] },
    ]);
    let returned = false;
    const endless: AsyncIterable<StreamItem> = {
      [Symbol.asyncIterator]: () => ({
        next: () => new Promise<IteratorResult<StreamItem>>(() => undefined),
        return: async () => {
          returned = true;
          return { value: undefined, done: true };
        },
      }),
    };
    const it = wholeArtifacts(endless)[Symbol.asyncIterator]();
    void it.next();
    await it.return?.();
    expect(returned).toBe(true);
  });
});
