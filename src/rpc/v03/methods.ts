import type { CallContext } from "../caller";
import { A2AError } from "../../protocol/errors";
import { mapStream } from "../streams";
import type { MethodTable, StreamEvent } from "../jsonrpc-transport";
import type { A2ARequestHandler, StreamItem } from "../request-handler";
import type { SendMessageParams, TaskPushNotificationConfig } from "../../protocol/types";
import * as validate from "../../protocol/validate";
import {
  fromV03PushConfig,
  fromV03SendParams,
  legacyRecordFromMessage,
  legacySendParams,
  legacyToSendParams,
  toLegacyRecord,
  toV03AgentCard,
  toV03Event,
  toV03PushConfig,
  toV03SendResult,
  toV03Task,
  type LegacyTaskRecord,
  type V03Task,
} from "../../protocol/v03/convert";

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === "object" && v !== null && !Array.isArray(v);
const bad = (msg: string) => A2AError.invalidParams(msg);

function params(p: unknown): Obj {
  if (!isObj(p)) throw bad("params must be an object");
  return p;
}

function nonEmpty(o: Obj, key: string): string {
  const v = o[key];
  if (typeof v !== "string" || v.length === 0) throw bad(`params.${key} must be a non-empty string`);
  return v;
}

/** Most pages a v0.3 `tasks/pushNotificationConfig/list` (which has no paging) will walk through. */
const MAX_PUSH_CONFIG_PAGES = 100;

/**
 * A2A v0.3's JSON-RPC methods (for requests without an A2A-Version header), over the same request handler as
 * v1.0, plus the pre-0.2 Hermes `tasks/send` and `tasks/get {taskId}`. Results are the v0.3 objects themselves
 * (Task/Message with `kind`), and errors are plain `{code, message, data?}`.
 */
export function v03Methods(handler: A2ARequestHandler, opts: { newId?: () => string } = {}): MethodTable {
  const freshId = opts.newId ?? (() => crypto.randomUUID());

  async function legacySend(p: unknown, ctx: CallContext): Promise<LegacyTaskRecord> {
    const legacy = legacySendParams(p);
    const result = await handler.sendMessage(legacyToSendParams(legacy, ctx.caller.name, freshId), ctx);
    if ("task" in result) return toLegacyRecord(result.task, ctx.caller.name);
    return legacyRecordFromMessage(result.message, legacy, ctx.caller.name);
  }

  async function getTask(p: unknown, ctx: CallContext): Promise<V03Task | LegacyTaskRecord> {
    const o = params(p);
    if (o.id === undefined && o.taskId !== undefined) {
      // The Hermes call: `tasks/get {taskId}` answers the Hermes record.
      const id = nonEmpty(o, "taskId");
      return toLegacyRecord(await handler.getTask({ id }, ctx), ctx.caller.name);
    }
    return toV03Task(await handler.getTask(validate.getTaskParams(o), ctx));
  }

  /** v0.3 get names the config by `pushNotificationConfigId`; without one it answers the task's first config. */
  async function getPushConfig(p: unknown, ctx: CallContext) {
    const o = params(p);
    const taskId = nonEmpty(o, "id");
    if (o.pushNotificationConfigId !== undefined && o.pushNotificationConfigId !== null) {
      const id = nonEmpty(o, "pushNotificationConfigId");
      return toV03PushConfig(await handler.getTaskPushNotificationConfig({ taskId, id }, ctx));
    }
    const { configs } = await handler.listTaskPushNotificationConfigs({ taskId, pageSize: 1 }, ctx);
    if (configs.length === 0)
      throw new A2AError(-32001, `No push notification config is set for task ${taskId}`, "TASK_NOT_FOUND", { taskId });
    return toV03PushConfig(configs[0]);
  }

  async function listPushConfigs(p: unknown, ctx: CallContext) {
    const taskId = nonEmpty(params(p), "id");
    const all: TaskPushNotificationConfig[] = [];
    let pageToken: string | undefined;
    for (let page = 0; page < MAX_PUSH_CONFIG_PAGES; page++) {
      const res = await handler.listTaskPushNotificationConfigs({ taskId, pageSize: 100, pageToken }, ctx);
      all.push(...res.configs);
      if (!res.nextPageToken || res.nextPageToken === pageToken) break;
      pageToken = res.nextPageToken;
    }
    return all.map(toV03PushConfig);
  }

  function streamParams(p: unknown): SendMessageParams {
    const sp = fromV03SendParams(p);
    // `blocking` means nothing to a stream; leave the v1.0 default rather than a returnImmediately it never asked for.
    if (sp.configuration) delete sp.configuration.returnImmediately;
    return sp;
  }

  return {
    unary: {
      "message/send": async (p, ctx) => toV03SendResult(await handler.sendMessage(fromV03SendParams(p), ctx)),
      "tasks/get": getTask,
      "tasks/cancel": async (p, ctx) => toV03Task(await handler.cancelTask(validate.cancelTaskParams(p), ctx)),
      "tasks/pushNotificationConfig/set": async (p, ctx) =>
        toV03PushConfig(await handler.createTaskPushNotificationConfig(fromV03PushConfig(p), ctx)),
      "tasks/pushNotificationConfig/get": getPushConfig,
      "tasks/pushNotificationConfig/list": listPushConfigs,
      "tasks/pushNotificationConfig/delete": async (p, ctx) => {
        const o = params(p);
        await handler.deleteTaskPushNotificationConfig(
          { taskId: nonEmpty(o, "id"), id: nonEmpty(o, "pushNotificationConfigId") },
          ctx,
        );
        return null;
      },
      "agent/getAuthenticatedExtendedCard": async (_p, ctx) => toV03AgentCard(await handler.getExtendedAgentCard(ctx)),
      "tasks/send": legacySend,
    },
    stream: {
      "message/stream": async (p, ctx) => events(await handler.sendStreamingMessage(streamParams(p), ctx)),
      "tasks/resubscribe": async (p, ctx, lastEventId) =>
        events(await handler.subscribeToTask(validate.subscribeParams(p), ctx, validate.lastEventId(lastEventId))),
    },
    error: (err: A2AError) => ({
      code: err.code,
      message: err.message,
      ...(err.metadata ? { data: { ...err.metadata } } : {}),
    }),
  };
}

function events(items: AsyncIterable<StreamItem>): AsyncIterable<StreamEvent> {
  return mapStream(items, (item) => ({
    id: item.seq === undefined ? undefined : String(item.seq),
    result: toV03Event(item.response),
  }));
}
