/**
 * The PushConfigStore contract (see src/push/push-config-store.ts), one suite for every implementation, run by
 * push-config-store.contract.test.ts. What one implementation does beyond it is tested beside it.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  ConfigOwnedElsewhere,
  PUSH_CONFIG_PAGE,
  TooManyPushConfigs,
  type PushConfigStore,
} from "../../src/push/push-config-store";
import { TaskStoreError, TaskStoreRequestError } from "../../src/tasks/task-store";

export interface OpenedConfigStore {
  store: PushConfigStore;
  close(): Promise<void> | void;
}

export function pushConfigStoreContract(
  name: string,
  open: () => Promise<OpenedConfigStore> | OpenedConfigStore,
): void {
  describe(`PushConfigStore contract: ${name}`, () => {
    let opened: OpenedConfigStore;
    let store: PushConfigStore;
    beforeEach(async () => {
      opened = await open();
      store = opened.store;
    });
    afterEach(async () => {
      await opened.close();
    });

    it("assigns a ULID when the id is empty, keeps a given id, and returns the config as set (token included)", async () => {
      const a = await store.create("alpha", { id: "", taskId: "t1", url: "https://hooks.example/a", token: "s3cret" });
      expect(a.id).toMatch(/^[0-9A-HJKMNP-TV-Z]{26}$/);
      expect(a).toEqual({ id: a.id, taskId: "t1", url: "https://hooks.example/a", token: "s3cret" });
      const b = await store.create("alpha", {
        id: "mine",
        taskId: "t1",
        url: "https://hooks.example/b",
        authentication: { scheme: "Bearer", credentials: "xyz" },
      });
      expect(b.id).toBe("mine");
      expect(b.authentication).toEqual({ scheme: "Bearer", credentials: "xyz" });
      // Credentials are write-only (a2aproject/A2A#1681): read back, the scheme stays and the secret is gone.
      expect(await store.get("alpha", "t1", "mine")).toEqual({
        id: "mine",
        taskId: "t1",
        url: "https://hooks.example/b",
        authentication: { scheme: "Bearer" },
      });
      expect(await store.get("alpha", "t1", a.id)).toEqual(a);
      expect(await store.get("alpha", "t1", "nope")).toBeUndefined();
    });

    it("replaces a config created again with the same (taskId, id)", async () => {
      await store.create("alpha", { id: "c", taskId: "t1", url: "https://old.example/", token: "one" });
      const again = await store.create("alpha", { id: "c", taskId: "t1", url: "https://new.example/" });
      expect(again).toEqual({ id: "c", taskId: "t1", url: "https://new.example/" });
      const { configs } = await store.list("alpha", "t1");
      expect(configs).toEqual([{ id: "c", taskId: "t1", url: "https://new.example/" }]);
    });

    it("hides another owner's configs and refuses to let it overwrite or delete them", async () => {
      await store.create("alpha", { id: "c", taskId: "t1", url: "https://alpha.example/", token: "alpha-token" });
      expect(await store.get("mallory", "t1", "c")).toBeUndefined();
      expect(await store.list("mallory", "t1")).toEqual({ configs: [], nextPageToken: "" });
      expect(await store.delete("mallory", "t1", "c")).toBe(false);
      let err: unknown;
      try {
        await store.create("mallory", { id: "c", taskId: "t1", url: "https://evil.example/" });
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(ConfigOwnedElsewhere);
      expect(err).toBeInstanceOf(TaskStoreError);
      expect(await store.get("alpha", "t1", "c")).toEqual({
        id: "c",
        taskId: "t1",
        url: "https://alpha.example/",
        token: "alpha-token",
      });
      // Delivery sees the config with its owner, for whoever's event it is.
      expect(await store.forTask("t1")).toEqual([
        { id: "c", taskId: "t1", url: "https://alpha.example/", token: "alpha-token", owner: "alpha" },
      ]);
      expect((await store.forDelivery("t1", "c"))?.owner).toBe("alpha");
    });

    it("lists one task's configs in pages of pageSize, with a token for the next page", async () => {
      for (const id of ["e", "a", "d", "b", "c"])
        await store.create("alpha", { id, taskId: "t1", url: `https://h.example/${id}` });
      await store.create("alpha", { id: "x", taskId: "t2", url: "https://h.example/other-task" });
      await store.create("beta", { id: "y", taskId: "t1", url: "https://h.example/other-owner" });

      const p1 = await store.list("alpha", "t1", 2);
      expect(p1.configs.map((c) => c.id)).toEqual(["a", "b"]);
      expect(p1.nextPageToken).not.toBe("");
      const p2 = await store.list("alpha", "t1", 2, p1.nextPageToken);
      expect(p2.configs.map((c) => c.id)).toEqual(["c", "d"]);
      const p3 = await store.list("alpha", "t1", 2, p2.nextPageToken);
      expect(p3).toEqual({ configs: [{ id: "e", taskId: "t1", url: "https://h.example/e" }], nextPageToken: "" });
      // A page exactly filled by the rest says there is no more.
      expect((await store.list("alpha", "t1", 5)).nextPageToken).toBe("");
      expect((await store.list("alpha", "t1")).configs).toHaveLength(5);
    });

    it("refuses a page token it did not issue", async () => {
      await expect(store.list("alpha", "t1", 2, "bm90LW91cnM")).rejects.toThrow(/pageToken/);
      // A ListTasks-style token (timestamp|id) is refused as invalid params, not misread as a cursor.
      let err: unknown;
      try {
        await store.list("alpha", "t1", 2, Buffer.from("2026-01-01T00:00:00.000Z|01ABC").toString("base64url"));
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(TaskStoreRequestError);
    });

    it("cuts pages to the most a page holds, and to at least one", async () => {
      for (let i = 0; i < PUSH_CONFIG_PAGE.max + 5; i++)
        await store.create("alpha", { id: `c${String(i).padStart(3, "0")}`, taskId: "t1", url: "https://h.example/" });
      const big = await store.list("alpha", "t1", 10_000);
      expect(big.configs).toHaveLength(PUSH_CONFIG_PAGE.max);
      expect(big.nextPageToken).not.toBe("");
      expect((await store.list("alpha", "t1")).configs).toHaveLength(PUSH_CONFIG_PAGE.default);
      expect((await store.list("alpha", "t1", 0)).configs).toHaveLength(1);
    });

    it("returns copies: changing what it returned, or what was given to it, changes nothing stored", async () => {
      const given = {
        id: "c",
        taskId: "t1",
        url: "https://h.example/",
        authentication: { scheme: "Bearer", credentials: "one" },
      };
      const saved = await store.create("alpha", given);
      given.authentication.credentials = "changed";
      saved.url = "https://evil.example/";
      const read = (await store.get("alpha", "t1", "c"))!;
      expect(read).toEqual({ id: "c", taskId: "t1", url: "https://h.example/", authentication: { scheme: "Bearer" } });
      read.authentication!.credentials = "changed again";
      read.authentication!.scheme = "Basic";
      (await store.forTask("t1"))[0].url = "https://evil.example/";
      expect(await store.forDelivery("t1", "c")).toEqual({
        id: "c",
        taskId: "t1",
        url: "https://h.example/",
        authentication: { scheme: "Bearer", credentials: "one" },
        owner: "alpha",
      });
    });

    it("never returns credentials to a client (get, list), but hands them to delivery (forTask, forDelivery)", async () => {
      const secret = `cred-${crypto.randomUUID()}`;
      await store.create("alpha", {
        id: "a",
        taskId: "t1",
        url: "https://h.example/a",
        token: "tok",
        authentication: { scheme: "Bearer", credentials: secret },
      });
      await store.create("alpha", {
        id: "b",
        taskId: "t1",
        url: "https://h.example/b",
        authentication: { scheme: "Basic" },
      });
      const got = await store.get("alpha", "t1", "a");
      expect(got).toEqual({
        id: "a",
        taskId: "t1",
        url: "https://h.example/a",
        token: "tok",
        authentication: { scheme: "Bearer" },
      });
      const listed = await store.list("alpha", "t1");
      expect(listed.configs).toEqual([
        got,
        { id: "b", taskId: "t1", url: "https://h.example/b", authentication: { scheme: "Basic" } },
      ]);
      expect(JSON.stringify([got, listed])).not.toContain(secret);
      expect((await store.forDelivery("t1", "a"))?.authentication).toEqual({ scheme: "Bearer", credentials: secret });
      expect((await store.forTask("t1")).map((c) => c.authentication)).toEqual([
        { scheme: "Bearer", credentials: secret },
        { scheme: "Basic" },
      ]);
    });

    it("deleteForTasks forgets every config of those tasks, whoever set it, and nothing else", async () => {
      await store.create("alpha", { id: "a", taskId: "t1", url: "https://h.example/a" });
      await store.create("beta", { id: "b", taskId: "t1", url: "https://h.example/b" });
      await store.create("alpha", { id: "c", taskId: "t2", url: "https://h.example/c" });
      await store.create("alpha", { id: "d", taskId: "t3", url: "https://h.example/d" });
      await store.deleteForTasks(["t1", "t2", "no-such-task"]);
      expect(await store.forTask("t1")).toEqual([]);
      expect(await store.forTask("t2")).toEqual([]);
      expect(await store.get("alpha", "t1", "a")).toBeUndefined();
      expect(await store.forDelivery("t1", "b")).toBeUndefined();
      expect((await store.forTask("t3")).map((c) => c.id)).toEqual(["d"]);
      await store.deleteForTasks([]);
      expect(await store.forTask("t3")).toHaveLength(1);
    });

    it("forgets a deleted config for delivery too, and deleting twice says so", async () => {
      await store.create("alpha", { id: "c", taskId: "t1", url: "https://h.example/" });
      expect(await store.delete("alpha", "t1", "c")).toBe(true);
      expect(await store.forTask("t1")).toEqual([]);
      expect(await store.forDelivery("t1", "c")).toBeUndefined();
      expect(await store.delete("alpha", "t1", "c")).toBe(false);
      // The id is free again, for anyone.
      expect((await store.create("beta", { id: "c", taskId: "t1", url: "https://b.example/" })).id).toBe("c");
    });

    describe("limits", () => {
      const refusal = async (p: Promise<unknown>) => {
        const err = await p.then(
          () => undefined,
          (e) => e,
        );
        expect(err).toBeInstanceOf(TooManyPushConfigs);
        return err as TooManyPushConfigs;
      };

      it("takes configs up to the limit per task, refuses one more (nothing saved) and still replaces an existing one", async () => {
        const limits = { perTask: 3, perCaller: 100 };
        for (const id of ["a", "b", "c"])
          await store.create("alpha", { id, taskId: "t1", url: `https://h.example/${id}` }, limits);
        const err = await refusal(store.create("alpha", { id: "d", taskId: "t1", url: "https://h.example/d" }, limits));
        expect({ limit: err.limit, held: err.held, max: err.max }).toEqual({ limit: "perTask", held: 3, max: 3 });
        expect(
          await refusal(store.create("alpha", { id: "", taskId: "t1", url: "https://h.example/e" }, limits)),
        ).toBeInstanceOf(TooManyPushConfigs);
        expect((await store.forTask("t1")).map((c) => c.id)).toEqual(["a", "b", "c"]);
        // A replacement adds nothing: it is taken at the limit.
        expect(await store.create("alpha", { id: "b", taskId: "t1", url: "https://h.example/b2" }, limits)).toEqual({
          id: "b",
          taskId: "t1",
          url: "https://h.example/b2",
        });
        // Another task has room of its own.
        await store.create("alpha", { id: "a", taskId: "t2", url: "https://h.example/a" }, limits);
        // Once one is deleted, one more fits.
        await store.delete("alpha", "t1", "a");
        await store.create("alpha", { id: "d", taskId: "t1", url: "https://h.example/d" }, limits);
      });

      it("counts a caller's configs on all its tasks, and only its own", async () => {
        const limits = { perTask: 10, perCaller: 4 };
        expect(await store.countForOwner("alpha")).toBe(0);
        for (const [task, id] of [
          ["t1", "a"],
          ["t1", "b"],
          ["t2", "a"],
          ["t3", "a"],
        ])
          await store.create("alpha", { id, taskId: task, url: "https://h.example/" }, limits);
        expect(await store.countForOwner("alpha")).toBe(4);
        const err = await refusal(store.create("alpha", { id: "a", taskId: "t4", url: "https://h.example/" }, limits));
        expect({ limit: err.limit, held: err.held, max: err.max }).toEqual({ limit: "perCaller", held: 4, max: 4 });
        expect(await store.forTask("t4")).toEqual([]);
        // Another caller is not held to alpha's count.
        await store.create("beta", { id: "a", taskId: "t9", url: "https://h.example/" }, limits);
        // Retention frees room.
        await store.deleteForTasks(["t1"]);
        await store.create("alpha", { id: "a", taskId: "t4", url: "https://h.example/" }, limits);
      });

      it("does not let callers racing each other pass the limit", async () => {
        const limits = { perTask: 5, perCaller: 1000 };
        const results = await Promise.allSettled(
          Array.from({ length: 20 }, (_, i) =>
            store.create("alpha", { id: `r${i}`, taskId: "t1", url: "https://h.example/" }, limits),
          ),
        );
        expect(results.filter((r) => r.status === "fulfilled")).toHaveLength(5);
        expect(
          results
            .filter((r) => r.status === "rejected")
            .every((r) => (r as PromiseRejectedResult).reason instanceof TooManyPushConfigs),
        ).toBe(true);
        expect(await store.forTask("t1")).toHaveLength(5);
      });
    });
  });
}
