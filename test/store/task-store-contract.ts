/**
 * The TaskStore contract (see src/tasks/task-store.ts), one suite for every implementation: in memory, SQLite,
 * and any other. A store passes it unchanged or it is not a TaskStore. Run it with `taskStoreContract(name,
 * open)` where `open` gives a fresh, empty store and a way to close it (test/store/task-store.contract.test.ts).
 * What one implementation does beyond the contract (SQLite's files, its implied event rows) is tested beside it.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { Message, StreamResponse } from "../../src/protocol/types";
import {
  DroppedWrite,
  TaskStoreError,
  TaskStoreRequestError,
  UnstorableData,
  WriteRefused,
  type TaskStore,
} from "../../src/tasks/task-store";
import { finishTask } from "../helpers/store-writes";
import { ulidFactory } from "../../src/clock";

export interface OpenedStore {
  store: TaskStore;
  /** Commits whatever is pending (for stores that group commits) and closes the store. */
  close(): Promise<void> | void;
}

const msg = (id: string, text: string, extra: Partial<Message> = {}): Message => ({
  messageId: id,
  role: "ROLE_USER",
  parts: [{ text }],
  ...extra,
});

/** A value no JSON can hold. */
function cyclic(): Record<string, unknown> {
  const o: Record<string, unknown> = { a: 1 };
  o.self = o;
  return o;
}

export function taskStoreContract(name: string, open: () => Promise<OpenedStore> | OpenedStore): void {
  describe(`TaskStore contract: ${name}`, () => {
    let opened: OpenedStore;
    let store: TaskStore;

    async function create(
      id: string,
      owner = "alpha",
      contextId = `ctx-${id}`,
      ts = new Date().toISOString(),
      messageId = `m-${id}`,
    ) {
      const r = await store.create({
        id,
        contextId,
        owner,
        message: msg(messageId, `text ${id}`),
        executor: "echo",
        timestamp: ts,
      });
      await r.committed;
      return r;
    }

    beforeEach(async () => {
      opened = await open();
      store = opened.store;
    });
    afterEach(async () => {
      await opened.close();
    });

    it("commits a SUBMITTED task with its first message, readable by its owner only", async () => {
      const { task, created } = await create("t1");
      expect(created).toBe(true);
      expect(task.status.state).toBe("TASK_STATE_SUBMITTED");
      const read = await store.get("t1", "alpha");
      expect(read).toMatchObject({ id: "t1", contextId: "ctx-t1", status: { state: "TASK_STATE_SUBMITTED" } });
      expect(read?.history?.map((m) => m.messageId)).toEqual(["m-t1"]);
      expect(await store.get("t1", "mallory")).toBeUndefined();
      expect(await store.get("nope", "alpha")).toBeUndefined();
    });

    it("returns the existing task for a repeated messageId from the same owner, a new one for another owner", async () => {
      await create("t1", "alpha", "c", undefined, "same");
      const again = await store.create({
        id: "t2",
        contextId: "c",
        owner: "alpha",
        message: msg("same", "x"),
        executor: "echo",
        timestamp: new Date().toISOString(),
      });
      expect(again.created).toBe(false);
      expect(again.task.id).toBe("t1");
      await again.committed;
      const other = await store.create({
        id: "t3",
        contextId: "c",
        owner: "beta",
        message: msg("same", "x"),
        executor: "echo",
        timestamp: new Date().toISOString(),
      });
      expect(other.created).toBe(true);
    });

    it("records the outcome once: state, artifacts, the agent's message and merged metadata", async () => {
      await (
        await store.create({
          id: "t1",
          contextId: "c",
          owner: "alpha",
          message: msg("m1", "hi"),
          executor: "echo",
          timestamp: "2026-01-01T00:00:00.000Z",
          metadata: { a: 1 },
        })
      ).committed;
      await store.record("t1", { status: { state: "TASK_STATE_WORKING", timestamp: "2026-01-01T00:00:01.000Z" } });
      expect((await store.get("t1", "alpha"))?.status.state).toBe("TASK_STATE_WORKING");
      const reply: Message = { messageId: "r1", role: "ROLE_AGENT", parts: [{ text: "done" }] };
      await finishTask(
        store,
        "t1",
        { state: "TASK_STATE_COMPLETED", timestamp: "2026-01-01T00:00:02.000Z", message: reply },
        [{ artifactId: "a1", parts: [{ text: "result" }] }],
        { usage: { total_tokens: 3 } },
      );
      const t = await store.get("t1", "alpha");
      expect(t?.status).toEqual({
        state: "TASK_STATE_COMPLETED",
        timestamp: "2026-01-01T00:00:02.000Z",
        message: reply,
      });
      expect(t?.artifacts).toEqual([{ artifactId: "a1", parts: [{ text: "result" }] }]);
      expect(t?.history?.map((m) => m.messageId)).toEqual(["m1", "r1"]);
      expect(t?.metadata).toEqual({ a: 1, usage: { total_tokens: 3 } });
    });

    it("applies historyLength: unset = all, 0 = none, N = the last N", async () => {
      await create("t1");
      await store.record("t1", { history: [msg("m2", "second")] });
      await store.record("t1", { history: [msg("m3", "third")] });
      expect((await store.get("t1", "alpha"))?.history?.map((m) => m.messageId)).toEqual(["m-t1", "m2", "m3"]);
      expect((await store.get("t1", "alpha", 0))?.history).toBeUndefined();
      expect((await store.get("t1", "alpha", 2))?.history?.map((m) => m.messageId)).toEqual(["m2", "m3"]);
    });

    it("lists the caller's tasks newest first, with filters, pages and a total", async () => {
      for (let i = 0; i < 7; i++) await create(`t${i}`, "alpha", i % 2 ? "odd" : "even", `2026-01-01T00:00:0${i}.000Z`);
      await create("x1", "beta", "even", "2026-01-01T00:00:09.000Z");
      await finishTask(store, "t3", { state: "TASK_STATE_COMPLETED", timestamp: "2026-01-01T00:00:08.000Z" }, [
        { artifactId: "a", parts: [{ text: "r" }] },
      ]);

      const all = await store.list("alpha", {});
      expect(all.totalSize).toBe(7);
      expect(all.tasks.map((t) => t.id)).toEqual(["t3", "t6", "t5", "t4", "t2", "t1", "t0"]);
      expect(all.nextPageToken).toBe("");
      expect(all.tasks[0].artifacts).toBeUndefined(); // includeArtifacts defaults to false

      const p1 = await store.list("alpha", { pageSize: 3 });
      expect(p1.tasks.map((t) => t.id)).toEqual(["t3", "t6", "t5"]);
      expect(p1.pageSize).toBe(3);
      const p2 = await store.list("alpha", { pageSize: 3, pageToken: p1.nextPageToken });
      expect(p2.tasks.map((t) => t.id)).toEqual(["t4", "t2", "t1"]);
      const p3 = await store.list("alpha", { pageSize: 3, pageToken: p2.nextPageToken });
      expect(p3.tasks.map((t) => t.id)).toEqual(["t0"]);
      expect(p3.nextPageToken).toBe("");

      expect((await store.list("alpha", { contextId: "odd" })).tasks.map((t) => t.id)).toEqual(["t3", "t5", "t1"]);
      expect(
        (await store.list("alpha", { status: "TASK_STATE_COMPLETED", includeArtifacts: true })).tasks,
      ).toMatchObject([{ id: "t3", artifacts: [{ artifactId: "a" }] }]);
      expect(
        (await store.list("alpha", { statusTimestampAfter: "2026-01-01T00:00:05.000Z" })).tasks.map((t) => t.id),
      ).toEqual(["t3", "t6"]);
      expect((await store.list("alpha", { historyLength: 0 })).tasks[0].history).toBeUndefined();
      expect((await store.list("beta", {})).tasks.map((t) => t.id)).toEqual(["x1"]);
    });

    /** totalSize for `owner` and `params`, checked against the tasks a walk through every page returns. */
    async function total(owner: string, params: Parameters<TaskStore["list"]>[1] = {}): Promise<number> {
      const first = await store.list(owner, { ...params, pageSize: 100 });
      let walked = first.tasks.length;
      for (let page = first; page.nextPageToken; walked += page.tasks.length)
        page = await store.list(owner, { ...params, pageSize: 100, pageToken: page.nextPageToken });
      expect(first.totalSize).toBe(walked);
      return first.totalSize;
    }

    it("keeps totalSize exact per owner and per state through creates, repeated messages and state changes", async () => {
      for (let i = 0; i < 4; i++) await create(`a${i}`, "alpha");
      for (let i = 0; i < 2; i++) await create(`b${i}`, "beta");
      // A repeated messageId makes no task, so it counts for nothing.
      expect(
        (
          await store.create({
            id: "a9",
            contextId: "c",
            owner: "alpha",
            message: msg("m-a0", "again"),
            executor: "echo",
            timestamp: new Date().toISOString(),
          })
        ).created,
      ).toBe(false);
      expect([await total("alpha"), await total("beta"), await total("gamma")]).toEqual([4, 2, 0]);
      expect(await total("alpha", { status: "TASK_STATE_SUBMITTED" })).toBe(4);
      expect(await total("alpha", { status: "TASK_STATE_WORKING" })).toBe(0);

      const at = (s: number) => `2026-01-01T00:00:${String(s).padStart(2, "0")}.000Z`;
      await store.record("a0", { status: { state: "TASK_STATE_WORKING", timestamp: at(1) } });
      await store.record("a0", { artifacts: [{ artifactId: "x", parts: [{ text: "chunk" }] }] }); // no state change
      await store.record("a0", { history: [msg("m2", "more")], metadata: { k: 1 } }); // nor here
      await store.record("a1", { status: { state: "TASK_STATE_WORKING", timestamp: at(2) } });
      await finishTask(store, "a1", { state: "TASK_STATE_COMPLETED", timestamp: at(3) });
      await finishTask(store, "a2", { state: "TASK_STATE_FAILED", timestamp: at(4) });
      await store.record("b0", { status: { state: "TASK_STATE_INPUT_REQUIRED", timestamp: at(5) } });
      // the same state again
      await store.record("b0", { status: { state: "TASK_STATE_INPUT_REQUIRED", timestamp: at(6) } });

      expect(await total("alpha")).toBe(4);
      const byState = async (owner: string) =>
        Object.fromEntries(
          await Promise.all(
            (
              [
                "TASK_STATE_SUBMITTED",
                "TASK_STATE_WORKING",
                "TASK_STATE_COMPLETED",
                "TASK_STATE_FAILED",
                "TASK_STATE_INPUT_REQUIRED",
              ] as const
            ).map(async (s) => [s, await total(owner, { status: s })]),
          ),
        );
      expect(await byState("alpha")).toEqual({
        TASK_STATE_SUBMITTED: 1,
        TASK_STATE_WORKING: 1,
        TASK_STATE_COMPLETED: 1,
        TASK_STATE_FAILED: 1,
        TASK_STATE_INPUT_REQUIRED: 0,
      });
      expect(await byState("beta")).toEqual({
        TASK_STATE_SUBMITTED: 1,
        TASK_STATE_WORKING: 0,
        TASK_STATE_COMPLETED: 0,
        TASK_STATE_FAILED: 0,
        TASK_STATE_INPUT_REQUIRED: 1,
      });
      expect(await total("beta")).toBe(2);
    });

    it("keeps totalSize exact with filters beside owner and state: context, status time, and the two with a state", async () => {
      const at = (s: number) => `2026-01-01T00:00:${String(s).padStart(2, "0")}.000Z`;
      for (let i = 0; i < 6; i++) await create(`t${i}`, "alpha", i % 2 ? "odd" : "even", at(i));
      await create("x1", "beta", "odd", at(7));
      await finishTask(store, "t1", { state: "TASK_STATE_COMPLETED", timestamp: at(8) });
      await finishTask(store, "t2", { state: "TASK_STATE_COMPLETED", timestamp: at(9) });
      expect(await total("alpha", { contextId: "odd" })).toBe(3);
      expect(await total("alpha", { contextId: "odd", status: "TASK_STATE_COMPLETED" })).toBe(1);
      expect(await total("alpha", { contextId: "odd", status: "TASK_STATE_SUBMITTED" })).toBe(2);
      expect(await total("beta", { contextId: "odd" })).toBe(1);
      expect(await total("alpha", { statusTimestampAfter: at(3) })).toBe(4); // t4, t5, and t1, t2 ended later
      expect(await total("alpha", { statusTimestampAfter: at(3), status: "TASK_STATE_SUBMITTED" })).toBe(2);
      expect(await total("alpha", { statusTimestampAfter: at(8), contextId: "even" })).toBe(1);
      expect(await total("alpha", { statusTimestampAfter: at(9) })).toBe(0);
    });

    it("refuses a page token it did not issue", async () => {
      await expect(store.list("alpha", { pageToken: "garbage" })).rejects.toThrow(TaskStoreRequestError);
    });

    it("finds tasks a previous run left unfinished", async () => {
      await create("t1");
      await create("t2");
      await store.record("t2", { status: { state: "TASK_STATE_WORKING" } });
      await create("t3");
      await finishTask(store, "t3", { state: "TASK_STATE_COMPLETED" }, []);
      expect((await store.unfinished()).map((t) => [t.id, t.state])).toEqual([
        ["t1", "TASK_STATE_SUBMITTED"],
        ["t2", "TASK_STATE_WORKING"],
      ]);
    });

    it("finds a context named after its first task (the node's own contexts) by id and its later tasks by index", async () => {
      await create("c1", "alpha", "c1", undefined, "a"); // starts context c1: the node named it after the task
      await create("c2", "alpha", "c1", undefined, "b"); // continues it
      await create("c3", "alpha", "c1", undefined, "c");
      await create("c4", "beta", "c1", undefined, "d"); // another peer's context of the same name
      await create("x1", "alpha", "other", undefined, "e");
      await create("c1x", "alpha", "c3", undefined, "f"); // a task continuing a context named like task c3
      expect((await store.contextHistory("c1", "alpha", 10)).map((m) => m.messageId)).toEqual(["a", "b", "c"]);
      expect(await store.countInContext("c1", "alpha")).toBe(3);
      expect(await store.countInContext("c1", "beta")).toBe(1);
      expect((await store.list("alpha", { contextId: "c1" })).tasks.map((t) => t.id).sort()).toEqual([
        "c1",
        "c2",
        "c3",
      ]);
      expect((await store.list("alpha", { contextId: "c1" })).totalSize).toBe(3);
      // Task c3 belongs to context c1: it is not the first task of a context "c3".
      expect((await store.contextHistory("c3", "alpha", 10)).map((m) => m.messageId)).toEqual(["f"]);
      expect(await store.countInContext("c3", "alpha")).toBe(1);
      expect((await store.list("alpha", { contextId: "c3" })).tasks.map((t) => t.id)).toEqual(["c1x"]);
      expect(await store.list("alpha", { contextId: "none" })).toMatchObject({ tasks: [], totalSize: 0 });
    });

    it("gives a context's history across its tasks, bounded, oldest first, owner-scoped", async () => {
      await create("t1", "alpha", "ctx", undefined, "a");
      await finishTask(
        store,
        "t1",
        { state: "TASK_STATE_COMPLETED", message: { messageId: "b", role: "ROLE_AGENT", parts: [{ text: "reply" }] } },
        [],
      );
      await create("t2", "alpha", "ctx", undefined, "c");
      await create("t3", "beta", "ctx", undefined, "d");
      expect((await store.contextHistory("ctx", "alpha", 10)).map((m) => m.messageId)).toEqual(["a", "b", "c"]);
      expect((await store.contextHistory("ctx", "alpha", 2)).map((m) => m.messageId)).toEqual(["b", "c"]);
      expect((await store.contextHistory("ctx", "beta", 10)).map((m) => m.messageId)).toEqual(["d"]);
    });

    it("sees a create that is not yet committed when the same message comes again (idempotency)", async () => {
      // Both asked before either is answered: the second must not miss the first while it is in flight.
      const [first, second] = await Promise.all([
        store.create({
          id: "p1",
          contextId: "c",
          owner: "alpha",
          message: msg("dup", "x"),
          executor: "echo",
          timestamp: new Date().toISOString(),
        }),
        store.create({
          id: "p2",
          contextId: "c",
          owner: "alpha",
          message: msg("dup", "x"),
          executor: "echo",
          timestamp: new Date().toISOString(),
        }),
      ]);
      expect(first.created).toBe(true);
      expect(second).toMatchObject({ created: false, task: { id: "p1" } });
      await second.committed;
      expect((await store.get("p1", "alpha"))?.id).toBe("p1"); // the duplicate's promise waits for the commit
      expect(await store.get("p2", "alpha")).toBeUndefined();
    });

    it("merges a create, a status change and the outcome made in one turn into one committed task", async () => {
      const r = await store.create({
        id: "m1",
        contextId: "c",
        owner: "alpha",
        message: msg("q", "x"),
        executor: "echo",
        timestamp: "2026-01-01T00:00:00.000Z",
      });
      void store.record("m1", { status: { state: "TASK_STATE_WORKING", timestamp: "2026-01-01T00:00:00.001Z" } });
      const done = finishTask(store, "m1", { state: "TASK_STATE_COMPLETED", timestamp: "2026-01-01T00:00:00.002Z" }, [
        { artifactId: "a", parts: [{ text: "y" }] },
      ]);
      await Promise.all([r.committed, done]);
      expect(await store.get("m1", "alpha")).toMatchObject({
        status: { state: "TASK_STATE_COMPLETED", timestamp: "2026-01-01T00:00:00.002Z" },
        artifacts: [{ artifactId: "a" }],
      });
      expect(await store.unfinished()).toEqual([]);
    });

    it("replaces an artifact re-sent with the same artifactId, keeping its place", async () => {
      await create("t1");
      await finishTask(store, "t1", { state: "TASK_STATE_WORKING" }, [
        { artifactId: "a", parts: [{ text: "v1" }] },
        { artifactId: "b", parts: [{ text: "b" }] },
      ]);
      await finishTask(store, "t1", { state: "TASK_STATE_COMPLETED" }, [{ artifactId: "a", parts: [{ text: "v2" }] }]);
      expect((await store.get("t1", "alpha"))?.artifacts?.map((a) => a.parts[0].text)).toEqual(["v2", "b"]);
    });

    it("numbers events per task and replays those after a given number", async () => {
      await create("t1");
      expect(await store.lastEventSeq("t1")).toBe(0);
      const ev = (state: string) => ({ statusUpdate: { taskId: "t1", contextId: "c", status: { state } } }) as never;
      await store.record("t1", { events: { firstSeq: 1, items: [ev("TASK_STATE_WORKING")] }, rowSeq: 1 });
      await store.record("t1", {
        events: { firstSeq: 2, items: [ev("TASK_STATE_WORKING"), ev("TASK_STATE_COMPLETED")] },
      });
      expect(await store.lastEventSeq("t1")).toBe(3);
      expect((await store.eventsAfter("t1", 1)).map((e) => e.seq)).toEqual([2, 3]);
      expect((await store.snapshot("t1", "alpha"))?.lastSeq).toBe(1);
      expect(await store.lastEventSeq("other")).toBe(0);
    });

    it("discards a task's writes not yet committed (they reject with DroppedWrite, nothing of them stored), and only that task's", async () => {
      await create("t1");
      await create("t2");
      const ev = (id: string, text: string): StreamResponse => ({
        statusUpdate: {
          taskId: id,
          contextId: `ctx-${id}`,
          status: { state: "TASK_STATE_WORKING", message: msg(text, text) },
        },
      });
      await store.record("t1", { events: { firstSeq: 1, items: [ev("t1", "kept")] } });
      // Both made in this turn, neither committed yet: t1's are dropped, t2's stay.
      const dropped = [
        store.record("t1", { events: { firstSeq: 2, items: [ev("t1", "dropped")] } }),
        store.record("t1", { metadata: { gone: true } }),
      ];
      const other = store.record("t2", { events: { firstSeq: 1, items: [ev("t2", "other")] } });
      store.discard("t1");
      for (const d of dropped) {
        await expect(d).rejects.toBeInstanceOf(DroppedWrite);
        await expect(d).rejects.toBeInstanceOf(WriteRefused);
      }
      await other;
      expect(await store.lastEventSeq("t1")).toBe(1);
      expect((await store.get("t1", "alpha"))?.metadata).toBeUndefined();
      expect((await store.eventsAfter("t2", 0)).map((e) => e.seq)).toEqual([1]);
      // The task's numbering continues from what is stored; later writes commit.
      await store.record("t1", { events: { firstSeq: 2, items: [ev("t1", "after")] } });
      expect(
        (await store.eventsAfter("t1", 0)).map(
          (e) =>
            (e.response as { statusUpdate: { status: { message: Message } } }).statusUpdate.status.message.messageId,
        ),
      ).toEqual(["kept", "after"]);
      store.discard("t1"); // nothing pending: nothing happens
      store.discard("unknown");
    });

    it("applies one change whole, in call order: history, status, artifacts merged, metadata merged, events", async () => {
      await (
        await store.create({
          id: "t1",
          contextId: "c",
          owner: "alpha",
          message: msg("m1", "hi"),
          executor: "echo",
          timestamp: "2026-01-01T00:00:00.000Z",
          metadata: { keep: true, n: 1 },
        })
      ).committed;
      const status = {
        state: "TASK_STATE_INPUT_REQUIRED" as const,
        timestamp: "2026-01-01T00:00:01.000Z",
        message: { ...msg("q", "which one?"), role: "ROLE_AGENT" as const },
      };
      const ev: StreamResponse = { statusUpdate: { taskId: "t1", contextId: "c", status } };
      const first = store.record("t1", {
        history: [status.message],
        status,
        artifacts: [{ artifactId: "a", parts: [{ text: "draft" }] }],
        metadata: { n: 2 },
        events: { firstSeq: 1, items: [ev] },
        rowSeq: 1,
      });
      const second = store.record("t1", { history: [msg("m2", "the first")], metadata: { extra: "x" } });
      await Promise.all([first, second]);
      const t = await store.get("t1", "alpha");
      expect(t?.status).toEqual(status);
      expect(t?.history?.map((m) => m.messageId)).toEqual(["m1", "q", "m2"]);
      expect(t?.artifacts).toEqual([{ artifactId: "a", parts: [{ text: "draft" }] }]);
      expect(t?.metadata).toEqual({ keep: true, n: 2, extra: "x" });
      expect((await store.snapshot("t1", "alpha"))?.lastSeq).toBe(1);
      expect(await store.eventsAfter("t1", 0)).toEqual([{ seq: 1, response: ev }]);
      expect(await store.lastEventSeq("t1")).toBe(1);
    });

    it("keeps what it stored apart from what the caller holds: later changes to the caller's objects change nothing", async () => {
      const message = msg("m1", "original");
      const r = await store.create({
        id: "t1",
        contextId: "c",
        owner: "alpha",
        message,
        executor: "echo",
        timestamp: new Date().toISOString(),
      });
      await r.committed;
      const status = { state: "TASK_STATE_WORKING" as const, timestamp: "2026-01-01T00:00:01.000Z" };
      await store.record("t1", { status });
      message.parts[0].text = "changed";
      (status as { state: string }).state = "TASK_STATE_FAILED";
      const t = await store.get("t1", "alpha");
      expect(t?.history?.[0].parts[0].text).toBe("original");
      expect(t?.status.state).toBe("TASK_STATE_WORKING");
      t!.status.state = "TASK_STATE_CANCELED";
      expect((await store.get("t1", "alpha"))?.status.state).toBe("TASK_STATE_WORKING");
    });

    it("refuses a change to a task it does not hold, with WriteRefused; other tasks' writes go on", async () => {
      await create("t1");
      const ghost = store.record("ghost", { status: { state: "TASK_STATE_WORKING" } });
      const good = store.record("t1", { status: { state: "TASK_STATE_WORKING" } });
      await expect(ghost).rejects.toBeInstanceOf(WriteRefused);
      await expect(ghost).rejects.toBeInstanceOf(TaskStoreError);
      await good;
      expect((await store.get("t1", "alpha"))?.status.state).toBe("TASK_STATE_WORKING");
      expect(await store.get("ghost", "alpha")).toBeUndefined();
    });

    it("refuses data it cannot store with UnstorableData, recording nothing of that call, and affects no other task", async () => {
      await expect(
        store.create({
          id: "bad",
          contextId: "c",
          owner: "alpha",
          message: msg("mb", "x"),
          executor: "echo",
          timestamp: new Date().toISOString(),
          metadata: cyclic(),
        }),
      ).rejects.toThrow(UnstorableData);
      await create("t1");
      await create("t2");
      const bad = store.record("t1", {
        status: { state: "TASK_STATE_WORKING" },
        history: [{ ...msg("x", "y"), metadata: cyclic() }],
      });
      const good = finishTask(store, "t2", { state: "TASK_STATE_COMPLETED", timestamp: new Date().toISOString() }, [
        { artifactId: "a", parts: [{ text: "ok" }] },
      ]);
      await expect(bad).rejects.toBeInstanceOf(UnstorableData);
      await good;
      expect(await store.get("bad", "alpha")).toBeUndefined();
      // Nothing of the refused change, not even its valid status, was applied.
      expect(await store.get("t1", "alpha")).toMatchObject({ status: { state: "TASK_STATE_SUBMITTED" } });
      expect((await store.get("t1", "alpha"))?.history).toHaveLength(1);
      expect(await store.get("t2", "alpha")).toMatchObject({
        status: { state: "TASK_STATE_COMPLETED" },
        artifacts: [{ artifactId: "a" }],
      });
    });

    it("makes tasks created with idempotent: false each their own, whatever their messageId", async () => {
      const a = await store.create({
        id: "a",
        contextId: "c",
        owner: "local",
        message: msg("same", "x"),
        executor: "echo",
        timestamp: new Date().toISOString(),
        idempotent: false,
      });
      const b = await store.create({
        id: "b",
        contextId: "c",
        owner: "local",
        message: msg("same", "x"),
        executor: "echo",
        timestamp: new Date().toISOString(),
        idempotent: false,
      });
      await Promise.all([a.committed, b.committed]);
      expect([a.created, b.created]).toEqual([true, true]);
      expect((await store.get("a", "local"))?.id).toBe("a");
      expect((await store.get("b", "local"))?.id).toBe("b");
      // A later idempotent create of that messageId is a new task too: the others were never keyed by it.
      const c = await store.create({
        id: "c",
        contextId: "c",
        owner: "local",
        message: msg("same", "x"),
        executor: "echo",
        timestamp: new Date().toISOString(),
      });
      expect(c.created).toBe(true);
      await c.committed;
    });

    it("walks every task once through pages of one, while tasks share a timestamp", async () => {
      const ts = "2026-01-01T00:00:00.000Z";
      for (const id of ["t1", "t2", "t3", "t4", "t5"]) await create(id, "alpha", "c", ts);
      const seen: string[] = [];
      let token = "";
      do {
        const page = await store.list("alpha", { pageSize: 1, pageToken: token || undefined });
        expect(page.totalSize).toBe(5);
        expect(page.tasks.length).toBeLessThanOrEqual(1);
        seen.push(...page.tasks.map((t) => t.id));
        token = page.nextPageToken;
      } while (token);
      expect(seen).toEqual(["t5", "t4", "t3", "t2", "t1"]);
    });

    it("replays the events of a task created, run and ended in one go exactly as they were written", async () => {
      const id = "once";
      const contextId = "ctx-once";
      const r = await store.create({
        id,
        contextId,
        owner: "alpha",
        message: msg("m", "hi"),
        executor: "echo",
        timestamp: "2026-01-01T00:00:00.000Z",
      });
      const working = { state: "TASK_STATE_WORKING" as const, timestamp: "2026-01-01T00:00:00.001Z" };
      void store.record(id, { status: working });
      const artifact = { artifactId: "a", name: "answer", parts: [{ text: "hello" }, { data: { n: 1 } }] };
      const status = {
        state: "TASK_STATE_COMPLETED" as const,
        timestamp: "2026-01-01T00:00:00.002Z",
        message: { ...msg("r", "done"), role: "ROLE_AGENT" as const },
      };
      const events: StreamResponse[] = [
        { statusUpdate: { taskId: id, contextId, status: working } },
        { artifactUpdate: { taskId: id, contextId, artifact, lastChunk: true } },
        { statusUpdate: { taskId: id, contextId, status } },
      ];
      void finishTask(store, id, status, [{ ...artifact, parts: [...artifact.parts] }]);
      await Promise.all([r.committed, store.record(id, { events: { firstSeq: 1, items: events }, rowSeq: 3 })]);
      expect(JSON.stringify((await store.eventsAfter(id, 0)).map((e) => e.response))).toBe(JSON.stringify(events));
      expect((await store.eventsAfter(id, 0)).map((e) => e.seq)).toEqual([1, 2, 3]);
      expect((await store.eventsAfter(id, 2)).map((e) => e.seq)).toEqual([3]);
      expect(await store.eventsAfter(id, 3)).toEqual([]);
      expect(await store.lastEventSeq(id)).toBe(3);
      expect(await store.snapshot(id, "alpha")).toMatchObject({
        lastSeq: 3,
        task: { status: { state: "TASK_STATE_COMPLETED" } },
      });
    });

    it("keeps the node state apart from the metadata: given at creation, merged key by key, read by snapshot only", async () => {
      const ts = new Date().toISOString();
      // The caller's metadata names the same keys: what a caller sends never reaches the node state.
      const caller = { "hermes/runId": "run_forged", note: "mine" };
      await (
        await store.create({
          id: "t1",
          contextId: "c1",
          owner: "alpha",
          message: msg("m1", "x"),
          executor: "echo",
          metadata: caller,
          state: { "a2a-node/extensions": ["urn:x"] },
          timestamp: ts,
        })
      ).committed;
      expect((await store.snapshot("t1", "alpha"))?.state).toEqual({ "a2a-node/extensions": ["urn:x"] });
      await store.record("t1", { state: { "hermes/runId": "run_1" } });
      await store.record("t1", {
        state: { "hermes/pendingApproval": { command: "ls" } },
        status: { state: "TASK_STATE_WORKING", timestamp: ts },
      });
      await store.record("t1", { state: { "hermes/pendingApproval": null }, metadata: { shown: 1 } });
      const snap = await store.snapshot("t1", "alpha");
      expect(snap?.state).toEqual({
        "a2a-node/extensions": ["urn:x"],
        "hermes/runId": "run_1",
        "hermes/pendingApproval": null,
      });
      // Reads a caller's call makes show the metadata alone.
      expect(snap?.task.metadata).toEqual({ ...caller, shown: 1 });
      expect((await store.get("t1", "alpha"))?.metadata).toEqual({ ...caller, shown: 1 });
      expect(JSON.stringify(await store.get("t1", "alpha"))).not.toContain("run_1");
      expect(JSON.stringify(await store.list("alpha", {}))).not.toContain("run_1");
      // A task with none has {}; one made in the same turn as its state changes has them all.
      await create("t2");
      expect((await store.snapshot("t2", "alpha"))?.state).toEqual({});
      const made = store.create({
        id: "t3",
        contextId: "c3",
        owner: "alpha",
        message: msg("m3", "x"),
        executor: "echo",
        state: { a: 1 },
        timestamp: ts,
      });
      await Promise.all([(await made).committed, store.record("t3", { state: { b: 2 } })]);
      expect((await store.snapshot("t3", "alpha"))?.state).toEqual({ a: 1, b: 2 });
      await expect(store.record("t3", { state: cyclic() })).rejects.toBeInstanceOf(UnstorableData);
    });

    it("scopes snapshots to the owner too", async () => {
      await create("t1");
      expect((await store.snapshot("t1", "alpha"))?.task.id).toBe("t1");
      expect(await store.snapshot("t1", "mallory")).toBeUndefined();
      expect(await store.snapshot("none", "alpha")).toBeUndefined();
    });

    describe("retention (deleteFinished)", () => {
      const DAY = 86_400_000;
      const T0 = Date.parse("2026-03-01T00:00:00.000Z");
      /** A task created `createdDaysAgo` days before T0, in `state` since `endedDaysAgo` days before T0. */
      async function aged(
        owner: string,
        createdDaysAgo: number,
        endedDaysAgo: number,
        state: string,
        events = 0,
      ): Promise<string> {
        const created = T0 - createdDaysAgo * DAY;
        const id = ulidFactory(() => created)();
        await (
          await store.create({
            id,
            contextId: `ctx-${id}`,
            owner,
            message: msg(`m-${id}`, "old"),
            executor: "echo",
            timestamp: new Date(created).toISOString(),
          })
        ).committed;
        const status = { state: state as never, timestamp: new Date(T0 - endedDaysAgo * DAY).toISOString() };
        const items: StreamResponse[] = Array.from({ length: events }, () => ({
          statusUpdate: { taskId: id, contextId: `ctx-${id}`, status },
        }));
        await store.record(id, { status, ...(events ? { events: { firstSeq: 1, items }, rowSeq: events } : {}) });
        return id;
      }
      const cutoff = new Date(T0 - 30 * DAY).toISOString();

      it("deletes tasks that ended before the cut-off, with their events; keeps those in flight, waiting, or ended since", async () => {
        const completed = await aged("alpha", 60, 50, "TASK_STATE_COMPLETED", 3);
        const failed = await aged("beta", 45, 40, "TASK_STATE_FAILED");
        const canceled = await aged("alpha", 40, 35, "TASK_STATE_CANCELED");
        const rejected = await aged("alpha", 40, 31, "TASK_STATE_REJECTED");
        const working = await aged("alpha", 60, 50, "TASK_STATE_WORKING");
        const waiting = await aged("alpha", 60, 50, "TASK_STATE_INPUT_REQUIRED");
        const endedLately = await aged("alpha", 60, 5, "TASK_STATE_COMPLETED");
        const recent = await aged("alpha", 2, 1, "TASK_STATE_COMPLETED");
        const deleted = await store.deleteFinished(cutoff, 100);
        expect([...deleted].sort()).toEqual([completed, failed, canceled, rejected].sort());
        for (const id of [completed, canceled, rejected]) expect(await store.get(id, "alpha")).toBeUndefined();
        expect(await store.get(failed, "beta")).toBeUndefined();
        expect(await store.eventsAfter(completed, 0)).toEqual([]);
        expect(await store.lastEventSeq(completed)).toBe(0);
        for (const id of [working, waiting, endedLately, recent]) expect((await store.get(id, "alpha"))?.id).toBe(id);
        expect((await store.list("alpha", {})).totalSize).toBe(4);
        expect(await store.deleteFinished(cutoff, 100)).toEqual([]); // nothing more is due
      });

      it("deletes at most `limit` per call, oldest first", async () => {
        const ids: string[] = [];
        for (let i = 0; i < 5; i++) ids.push(await aged("alpha", 90 - i, 80 - i, "TASK_STATE_COMPLETED"));
        expect(await store.deleteFinished(cutoff, 2)).toEqual(ids.slice(0, 2));
        expect(await store.deleteFinished(cutoff, 2)).toEqual(ids.slice(2, 4));
        expect(await store.deleteFinished(cutoff, 2)).toEqual(ids.slice(4));
        expect((await store.list("alpha", {})).totalSize).toBe(0);
      });

      it("keeps totalSize exact per owner and per state through deletes in batches", async () => {
        const states = ["TASK_STATE_COMPLETED", "TASK_STATE_FAILED", "TASK_STATE_CANCELED"] as const;
        for (let i = 0; i < 9; i++) await aged(i % 3 ? "alpha" : "beta", 90 - i, 80 - i, states[i % 3]);
        await aged("alpha", 60, 50, "TASK_STATE_WORKING");
        await aged("alpha", 60, 5, "TASK_STATE_COMPLETED");
        const counts = async () => ({
          alpha: (await store.list("alpha", {})).totalSize,
          beta: (await store.list("beta", {})).totalSize,
          ...Object.fromEntries(
            await Promise.all(states.map(async (s) => [s, (await store.list("alpha", { status: s })).totalSize])),
          ),
        });
        expect(await counts()).toEqual({
          alpha: 8,
          beta: 3,
          TASK_STATE_COMPLETED: 1,
          TASK_STATE_FAILED: 3,
          TASK_STATE_CANCELED: 3,
        });
        // Oldest first, four at a time: the first batch takes beta's t0, alpha's t1 (FAILED), t2 (CANCELED), beta's t3.
        expect(await store.deleteFinished(cutoff, 4)).toHaveLength(4);
        expect(await counts()).toEqual({
          alpha: 6,
          beta: 1,
          TASK_STATE_COMPLETED: 1,
          TASK_STATE_FAILED: 2,
          TASK_STATE_CANCELED: 2,
        });
        expect(await store.deleteFinished(cutoff, 4)).toHaveLength(4);
        expect(await store.deleteFinished(cutoff, 4)).toHaveLength(1);
        expect(await counts()).toEqual({
          alpha: 2,
          beta: 0,
          TASK_STATE_COMPLETED: 1,
          TASK_STATE_FAILED: 0,
          TASK_STATE_CANCELED: 0,
        });
        expect((await store.list("alpha", { status: "TASK_STATE_WORKING" })).totalSize).toBe(1);
      });

      it("forgets a deleted task's messageId: the same message later makes a new task", async () => {
        const id = await aged("alpha", 60, 50, "TASK_STATE_COMPLETED");
        await store.deleteFinished(cutoff, 10);
        const again = await store.create({
          id: ulidFactory()(),
          contextId: "c",
          owner: "alpha",
          message: msg(`m-${id}`, "again"),
          executor: "echo",
          timestamp: new Date().toISOString(),
        });
        expect(again.created).toBe(true);
        await again.committed;
      });

      it("leaves a walk through the pages whole: every task that remains is returned once", async () => {
        const old: string[] = [];
        const kept: string[] = [];
        // Interleaved in list order: old finished tasks between ones that stay.
        for (let i = 0; i < 6; i++) {
          old.push(await aged("alpha", 100 - i * 2, 60 - i * 2, "TASK_STATE_COMPLETED"));
          kept.push(await aged("alpha", 100 - i * 2 - 1, 59 - i * 2, "TASK_STATE_INPUT_REQUIRED"));
        }
        const seen: string[] = [];
        let page = await store.list("alpha", { pageSize: 3 });
        seen.push(...page.tasks.map((t) => t.id));
        await store.deleteFinished(cutoff, 100); // between two pages of the same walk
        while (page.nextPageToken) {
          page = await store.list("alpha", { pageSize: 3, pageToken: page.nextPageToken });
          seen.push(...page.tasks.map((t) => t.id));
        }
        for (const id of kept) expect(seen.filter((s) => s === id)).toHaveLength(1);
        expect(new Set(seen).size).toBe(seen.length);
        expect(seen.filter((id) => old.includes(id)).length).toBeLessThanOrEqual(3); // only what the first page had
      });
    });

    describe("usage (the per-caller storage quotas)", () => {
      it("counts an owner's tasks and their bytes, grows with what is written, and is nobody else's", async () => {
        expect(await store.usage("alpha")).toEqual({ tasks: 0, bytes: 0 });
        await create("t1");
        await create("t2");
        await create("t3", "beta");
        const two = await store.usage("alpha");
        expect(two.tasks).toBe(2);
        expect(two.bytes).toBeGreaterThan(2 * "text t1".length);
        const text = "r".repeat(10_000);
        await store.record("t1", {
          status: { state: "TASK_STATE_WORKING", timestamp: new Date().toISOString() },
          artifacts: [{ artifactId: "a", parts: [{ text }] }],
          events: {
            firstSeq: 1,
            items: [
              {
                artifactUpdate: { taskId: "t1", contextId: "ctx-t1", artifact: { artifactId: "a", parts: [{ text }] } },
              },
            ],
          },
        });
        const grown = await store.usage("alpha");
        expect(grown.tasks).toBe(2);
        // The artifact is in the task and in its event: at least twice its text.
        expect(grown.bytes - two.bytes).toBeGreaterThanOrEqual(2 * text.length);
        expect((await store.usage("beta")).tasks).toBe(1);
      });

      it("names the heaviest owners, most bytes first, and none that holds nothing", async () => {
        await create("a1", "alpha");
        await create("b1", "beta");
        await store.record("b1", { artifacts: [{ artifactId: "x", parts: [{ text: "b".repeat(5000) }] }] });
        await create("g1", "gamma");
        await store.record("g1", { artifacts: [{ artifactId: "x", parts: [{ text: "g".repeat(20_000) }] }] });
        const top = await store.heaviest(2);
        expect(top.map((u) => u.owner)).toEqual(["gamma", "beta"]);
        expect(top[0]).toEqual({ owner: "gamma", ...(await store.usage("gamma")) });
        expect((await store.heaviest(10)).map((u) => u.owner)).toEqual(["gamma", "beta", "alpha"]);
      });

      it("gives everything back when retention deletes an owner's tasks with their events", async () => {
        const old = "2020-01-01T00:00:00.000Z";
        for (const id of ["01D00000000000000000000001", "01D00000000000000000000002"]) {
          await (
            await store.create({
              id,
              contextId: `c-${id}`,
              owner: "alpha",
              message: msg(`m-${id}`, "x".repeat(3000)),
              executor: "echo",
              timestamp: old,
            })
          ).committed;
          const status = { state: "TASK_STATE_COMPLETED" as const, timestamp: old };
          await store.record(id, {
            status,
            events: { firstSeq: 1, items: [{ statusUpdate: { taskId: id, contextId: `c-${id}`, status } }] },
            rowSeq: 1,
          });
        }
        await create("t-beta", "beta");
        const beta = await store.usage("beta");
        expect((await store.usage("alpha")).tasks).toBe(2);
        expect(await store.deleteFinished("2021-01-01T00:00:00.000Z", 100)).toHaveLength(2);
        expect(await store.usage("alpha")).toEqual({ tasks: 0, bytes: 0 });
        expect(await store.usage("beta")).toEqual(beta);
        expect((await store.heaviest(10)).map((u) => u.owner)).toEqual(["beta"]);
      });
    });

    it("names its refusal of a page token as a TaskStoreRequestError, its own error type", async () => {
      let caught: unknown;
      try {
        await store.list("alpha", { pageToken: Buffer.from("no separator").toString("base64url") });
      } catch (err) {
        caught = err;
      }
      expect(caught).toBeInstanceOf(TaskStoreRequestError);
      expect(caught).toBeInstanceOf(TaskStoreError);
      expect((caught as Error).message).toContain("pageToken");
    });
  });
}
