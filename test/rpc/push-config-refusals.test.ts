/**
 * A SendMessage that brings its own push notification config (configuration.taskPushNotificationConfig) and
 * cannot have it: refused before its task is recorded when the caller already has as many webhooks as it may
 * (max_push_configs_per_caller); and if the config cannot be saved once the task is recorded, the task ends
 * FAILED saying so, never left SUBMITTED with nothing to run it (the fuzzer found one so). Real SQLite stores.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { EchoExecutor } from "../../src/executors/echo-executor";
import { A2AError } from "../../src/protocol/errors";
import type { PushConfigs } from "../../src/rpc/request-handler";
import type { TaskPushNotificationConfig } from "../../src/protocol/types";
import type { OpenDatabase } from "../../src/store/database";
import { SqlitePushConfigStore } from "../../src/store/sqlite-push-config-store";
import type { SqliteTaskStore } from "../../src/store/sqlite-task-store";
import { sqliteTaskStore, taskFixture } from "../helpers/task-fixture";

const alpha = { caller: { name: "alpha", fingerprint: "AA" } };
const send = (text: string) => ({
  message: { messageId: crypto.randomUUID(), role: "ROLE_USER" as const, parts: [{ text }] },
  configuration: {
    taskPushNotificationConfig: {
      id: "",
      taskId: "pending",
      url: "https://hooks.example/h",
    } as TaskPushNotificationConfig,
  },
});

let database: OpenDatabase;
let store: SqliteTaskStore;
beforeEach(() => {
  ({ database, store } = sqliteTaskStore("a2a-push-refusals-"));
});
afterEach(() => {
  store.flush();
  database.close();
});

function handler(configs: PushConfigs, perCaller = 2) {
  const runnerOptions = { maxConcurrent: 4, maxQueued: 100, historyMessages: 5 };
  return taskFixture({
    store,
    executor: new EchoExecutor(),
    runnerOptions,
    handlerOptions: { push: { configs, guard: { check: async () => {} }, limits: { perTask: 10, perCaller } } },
  }).handler;
}

describe("a SendMessage with its own push config", () => {
  it("is refused before its task is recorded when the caller has as many webhooks as it may", async () => {
    const h = handler(new SqlitePushConfigStore(database));
    await h.sendMessage(send("one"), alpha);
    await h.sendMessage(send("two"), alpha);
    const before = (await store.list("alpha", {})).totalSize;
    const err = await h.sendMessage(send("three"), alpha).then(
      () => undefined,
      (e) => e,
    );
    expect(err).toBeInstanceOf(A2AError);
    expect((err as A2AError).metadata).toMatchObject({ limit: "max_push_configs_per_caller" });
    expect((await store.list("alpha", {})).totalSize).toBe(before);
  });

  it("ends its task FAILED, saying why, when the config cannot be saved once the task is recorded", async () => {
    const real = new SqlitePushConfigStore(database);
    const broken: PushConfigs = {
      ...real,
      countForOwner: (o) => real.countForOwner(o),
      create: () => Promise.reject(new Error("database is locked")),
      get: real.get.bind(real),
      list: real.list.bind(real),
      delete: real.delete.bind(real),
    };
    const h = handler(broken);
    const err = await h.sendMessage(send("hooked"), alpha).then(
      () => undefined,
      (e) => e,
    );
    expect(err).toBeInstanceOf(Error);
    store.flush();
    const { tasks } = await store.list("alpha", {});
    expect(tasks).toHaveLength(1);
    expect(tasks[0].status.state).toBe("TASK_STATE_FAILED");
    expect(tasks[0].status.message?.parts[0]?.text).toBe(
      "not started: its push notification config could not be saved (database is locked)",
    );
    expect((await store.eventsAfter(tasks[0].id, 0)).map((e) => e.seq)).toEqual([1]);
  });
});
