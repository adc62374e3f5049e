/**
 * gRPC messages <-> the JSON the request handler takes and gives: a decoded request is the JSON-RPC params of
 * the same method; answers encode as the handler returns them; a client reads them back into our types.
 */
import { describe, expect, it } from "vitest";
import { A2AService } from "@a2a-js/sdk/server/grpc";
import { GrpcMessages } from "../../src/grpc/convert";
import { methodAt } from "../../src/grpc/a2a-service";
import type { ListTasksResult, SendMessageParams } from "../../src/protocol/types";
import { streamItems, task, userMessage } from "./fixtures";

const messages = new GrpcMessages();
const method = (name: string) => methodAt(`/lf.a2a.v1.A2AService/${name}`)!;

describe("GrpcMessages", () => {
  it("a client's request bytes decode to the params a JSON-RPC call carries", () => {
    const params: SendMessageParams = {
      message: userMessage,
      configuration: { returnImmediately: true, historyLength: 3 },
      metadata: { a: 1 },
    };
    const { path, bytes } = messages.encodeRequest("SendMessage", params);
    expect(path).toBe("/lf.a2a.v1.A2AService/SendMessage");
    expect(messages.decodeRequest(method("SendMessage"), bytes)).toEqual(params);
  });

  it("the tenant a gRPC request names stays in the params, as it would over JSON-RPC", () => {
    const { bytes } = messages.encodeRequest("GetTask", { tenant: "team-a", id: "t-1" });
    expect(messages.decodeRequest(method("GetTask"), bytes)).toEqual({ tenant: "team-a", id: "t-1" });
  });

  it("answers: a Task, a SendMessage result, each stream item, and Delete's Empty", () => {
    expect(messages.decodeResponse(method("GetTask"), messages.encodeResponse(method("GetTask"), task))).toEqual(task);
    const result = { task };
    expect(
      messages.decodeResponse(method("SendMessage"), messages.encodeResponse(method("SendMessage"), result)),
    ).toMatchObject(result);
    for (const response of streamItems) {
      const bytes = messages.encodeStreamItem(method("SubscribeToTask"), { seq: 3, response });
      expect(Object.keys(messages.decodeResponse(method("SubscribeToTask"), bytes) as object)).toEqual(
        Object.keys(response),
      );
    }
    const empty = messages.encodeResponse(method("DeleteTaskPushNotificationConfig"), undefined);
    expect(empty.length).toBe(0);
    expect(messages.decodeResponse(method("DeleteTaskPushNotificationConfig"), empty)).toBeUndefined();
  });

  it("a ListTasks answer read by a client has every member ListTasksResult requires, at their defaults", () => {
    const bytes = messages.encodeResponse(method("ListTasks"), {
      tasks: [],
      nextPageToken: "",
      pageSize: 50,
      totalSize: 0,
    } satisfies ListTasksResult);
    expect(messages.decodeResponse(method("ListTasks"), bytes)).toEqual({
      tasks: [],
      nextPageToken: "",
      pageSize: 50,
      totalSize: 0,
    });
  });

  it("the SDK server's answers decode too, and an empty union is refused", () => {
    const sdkBytes = A2AService.sendMessage.responseSerialize({
      payload: {
        $case: "message",
        value: {
          messageId: "r",
          contextId: "c",
          taskId: "",
          role: 2,
          parts: [],
          metadata: undefined,
          extensions: [],
          referenceTaskIds: [],
        },
      },
    });
    expect(messages.decodeResponse(method("SendMessage"), sdkBytes)).toMatchObject({
      message: { messageId: "r", contextId: "c", role: "ROLE_AGENT" },
    });
    expect(() => messages.decodeResponse(method("SendMessage"), new Uint8Array())).toThrow(/no payload/);
    expect(() => messages.decodeResponse(method("SendStreamingMessage"), new Uint8Array())).toThrow(/no payload/);
  });

  it("a method the service does not have cannot be encoded", () => {
    expect(() => messages.encodeRequest("SendMessages", {})).toThrow(/no method SendMessages/);
  });
});
