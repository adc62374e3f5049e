import type { CallContext } from "./caller";
import { A2AError } from "../protocol/errors";
import type { MethodTable } from "./jsonrpc-transport";
import type { A2ARequestHandler, StreamItem } from "./request-handler";
import { mapStream } from "./streams";
import * as validate from "../protocol/validate";
import { wholeArtifacts } from "./whole-artifacts";

/** A2A v1.0's JSON-RPC methods, over the request handler. */
export function v1Methods(handler: A2ARequestHandler): MethodTable {
  return {
    unary: {
      SendMessage: (p, ctx) => handler.sendMessage(validate.sendMessageParams(p), ctx),
      GetTask: (p, ctx) => handler.getTask(validate.getTaskParams(p), ctx),
      ListTasks: (p, ctx) => handler.listTasks(validate.listTasksParams(p), ctx),
      CancelTask: (p, ctx) => handler.cancelTask(validate.cancelTaskParams(p), ctx),
      CreateTaskPushNotificationConfig: (p, ctx) =>
        handler.createTaskPushNotificationConfig(validate.pushConfigParams(p), ctx),
      GetTaskPushNotificationConfig: (p, ctx) => handler.getTaskPushNotificationConfig(validate.pushConfigRef(p), ctx),
      ListTaskPushNotificationConfigs: (p, ctx) =>
        handler.listTaskPushNotificationConfigs(validate.listPushConfigsParams(p), ctx),
      DeleteTaskPushNotificationConfig: async (p, ctx) => {
        await handler.deleteTaskPushNotificationConfig(validate.pushConfigRef(p), ctx);
        return {};
      },
      GetExtendedAgentCard: (_p, ctx) => handler.getExtendedAgentCard(ctx),
    },
    stream: {
      SendStreamingMessage: async (p, ctx) =>
        events(await handler.sendStreamingMessage(validate.sendMessageParams(p), ctx), ctx),
      SubscribeToTask: async (p, ctx, lastEventId) =>
        events(await handler.subscribeToTask(validate.subscribeParams(p), ctx, validate.lastEventId(lastEventId)), ctx),
    },
    error: (err: A2AError) => err.toJsonRpc(),
  };
}

function events(items: AsyncIterable<StreamItem>, ctx: CallContext) {
  return mapStream(ctx.wholeArtifacts ? wholeArtifacts(items) : items, (item) => ({
    id: item.seq === undefined ? undefined : String(item.seq),
    result: item.response,
  }));
}
