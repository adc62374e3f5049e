import { describe, expect, it } from "vitest";
import type { StreamItem } from "../../src/protocol/types";
import { EventStream } from "../../src/tasks/event-stream";

const ev = (seq: number): StreamItem => ({
  seq,
  response: { statusUpdate: { taskId: "t", contextId: "c", status: { state: "TASK_STATE_WORKING" } } },
});

async function drain(stream: EventStream): Promise<(number | undefined)[]> {
  const seen: (number | undefined)[] = [];
  for await (const item of stream) seen.push(item.seq);
  return seen;
}

// A subscriber subscribes before it reads the stored events (so nothing falls between the two): what it hears
// live meanwhile is held until the stored events are in.
describe("EventStream hold/release", () => {
  it("delivers the replay first, then what was held, each event once and in order", async () => {
    const stream = new EventStream();
    stream.push({ response: { task: { id: "t", contextId: "c", status: { state: "TASK_STATE_WORKING" } } } });
    stream.hold();
    stream.push(ev(4)); // committed after the subscription, before the read...
    stream.push(ev(5));
    stream.release([ev(3), ev(4)]); // ...so the read saw 4 too
    stream.push(ev(6));
    stream.end();
    expect(await drain(stream)).toEqual([undefined, 3, 4, 5, 6]);
  });

  it("goes on from the number it is held at: nothing at or below it, even when the replay is empty", async () => {
    const stream = new EventStream();
    stream.hold(3); // the subscriber has 1-3 (Last-Event-ID 3); nothing was committed since when it read
    stream.push(ev(2)); // a read that started from an older position
    stream.push(ev(4));
    stream.release([]);
    stream.push(ev(5));
    stream.end();
    expect(await drain(stream)).toEqual([4, 5]);
  });

  it("ends only after the release when it was ended while held", async () => {
    const stream = new EventStream();
    stream.hold();
    stream.push(ev(2));
    stream.end(); // the task settled while the replay was being read
    stream.release([ev(1)]);
    expect(await drain(stream)).toEqual([1, 2]);
  });

  it("fails at once, held or not", async () => {
    const stream = new EventStream();
    stream.hold();
    stream.push(ev(1));
    stream.fail(new Error("not stored"));
    stream.release([ev(1)]);
    await expect(drain(stream)).rejects.toThrow("not stored");
  });
});
