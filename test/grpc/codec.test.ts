/**
 * The protobuf codec against the JSON forms a2a-node uses: JSON -> protobuf -> JSON is the same object, and the
 * bytes are what an independent implementation (@a2a-js/sdk 1.3.0's generated codecs, on @bufbuild/protobuf)
 * reads and writes. Then malformed input: each gets a DecodeError/EncodeError naming the field, never a crash.
 */
import { describe, expect, it } from "vitest";
import { BinaryWriter, WireType } from "@bufbuild/protobuf/wire";
import { A2AService } from "@a2a-js/sdk/server/grpc";
import { a2aCodec } from "../../src/grpc/a2a-service";
import { DecodeError, EncodeError, ProtoCodec } from "../../src/grpc/codec";
import { SCHEMA } from "../../src/grpc/a2a-service";
import { card, streamItems, task, userMessage } from "./fixtures";

const codec = a2aCodec();
const roundTrip = (type: string, value: unknown) =>
  codec.decode(`lf.a2a.v1.${type}`, codec.encode(`lf.a2a.v1.${type}`, value));

describe("JSON -> protobuf -> JSON", () => {
  it("a Task with every kind of part, Struct metadata and timestamps", () => {
    expect(roundTrip("Task", task)).toEqual(task);
  });

  it("an AgentCard with interfaces, extensions, security schemes (a map of oneofs) and signatures", () => {
    expect(roundTrip("AgentCard", card)).toEqual(card);
  });

  it("each of the four StreamResponse payloads", () => {
    for (const item of streamItems) expect(roundTrip("StreamResponse", item)).toEqual(item);
  });

  it("a SendMessageRequest keeps an explicit historyLength of 0 (optional: presence is tracked)", () => {
    const req = {
      message: userMessage,
      configuration: { historyLength: 0, acceptedOutputModes: ["text/plain"], returnImmediately: true },
    };
    expect(roundTrip("SendMessageRequest", req)).toEqual(req);
    const absent = { message: userMessage, configuration: { acceptedOutputModes: ["text/plain"] } };
    expect(roundTrip("SendMessageRequest", absent)).toEqual(absent);
  });

  it("an empty text part survives (a oneof member is present even at its default)", () => {
    const m = { messageId: "m", role: "ROLE_USER", parts: [{ text: "" }] };
    expect(roundTrip("Message", m)).toEqual(m);
  });

  it("drops values at their proto3 default, as ProtoJSON does, and fills them back on request", () => {
    const event = {
      taskId: "t",
      contextId: "c",
      artifact: { artifactId: "a", parts: [{ text: "x" }] },
      append: false,
      lastChunk: false,
    };
    expect(roundTrip("TaskArtifactUpdateEvent", event)).toEqual({
      taskId: "t",
      contextId: "c",
      artifact: event.artifact,
    });
    const bytes = codec.encode("lf.a2a.v1.ListTasksResponse", {
      tasks: [],
      nextPageToken: "",
      pageSize: 50,
      totalSize: 0,
    });
    expect(codec.decode("lf.a2a.v1.ListTasksResponse", bytes)).toEqual({ pageSize: 50 });
    expect(codec.decode("lf.a2a.v1.ListTasksResponse", bytes, { fillRequired: true })).toEqual({
      tasks: [],
      nextPageToken: "",
      pageSize: 50,
      totalSize: 0,
    });
  });

  it("accepts proto field names as well as JSON names, as ProtoJSON parsers do", () => {
    const bytes = codec.encode("lf.a2a.v1.GetTaskRequest", { id: "t", history_length: 2 });
    expect(codec.decode("lf.a2a.v1.GetTaskRequest", bytes)).toEqual({ id: "t", historyLength: 2 });
  });

  it("timestamps: offsets normalised to UTC, sub-millisecond precision kept", () => {
    const at = (timestamp: string) =>
      (roundTrip("TaskStatus", { state: "TASK_STATE_WORKING", timestamp }) as { timestamp: string }).timestamp;
    expect(at("2026-12-02T17:40:01+02:00")).toBe("2026-12-02T15:40:01.000Z");
    expect(at("2026-12-02T15:40:01.123456Z")).toBe("2026-12-02T15:40:01.123456Z");
    expect(at("2026-12-02T15:40:01.000000001Z")).toBe("2026-12-02T15:40:01.000000001Z");
    expect(at("0001-01-01T00:00:00Z")).toBe("0001-01-01T00:00:00.000Z");
  });
});

describe("the same bytes as @a2a-js/sdk 1.3.0's codecs", () => {
  it("a Task we encode is the Task the SDK decodes", () => {
    const sdkTask = A2AService.getTask.responseDeserialize(Buffer.from(codec.encode("lf.a2a.v1.Task", task)));
    expect(sdkTask.id).toBe("t-1");
    expect(sdkTask.status?.state).toBe(3);
    expect(sdkTask.status?.timestamp).toBe("2026-12-02T15:40:01.123Z");
    expect(sdkTask.history[0].parts.map((p) => p.content?.$case)).toEqual(["text", "raw", "url", "data"]);
    expect(sdkTask.history[0].parts[3].content).toEqual({ $case: "data", value: userMessage.parts[3].data });
    expect(sdkTask.metadata).toEqual(task.metadata);
  });

  it("a SendMessageRequest the SDK encodes is the request a JSON-RPC client would send", () => {
    const sdkBytes = A2AService.sendMessage.requestSerialize({
      tenant: "",
      message: {
        messageId: "m-9",
        contextId: "",
        taskId: "",
        role: 1,
        parts: [
          { content: { $case: "text", value: "hi" }, metadata: undefined, filename: "", mediaType: "text/plain" },
        ],
        metadata: { k: [1, 2] },
        extensions: [],
        referenceTaskIds: [],
      },
      configuration: {
        acceptedOutputModes: [],
        taskPushNotificationConfig: undefined,
        historyLength: 0,
        returnImmediately: false,
      },
      metadata: undefined,
    });
    expect(codec.decode("lf.a2a.v1.SendMessageRequest", sdkBytes)).toEqual({
      message: {
        messageId: "m-9",
        role: "ROLE_USER",
        parts: [{ text: "hi", mediaType: "text/plain" }],
        metadata: { k: [1, 2] },
      },
      configuration: { historyLength: 0 },
    });
  });

  it("a StreamResponse the SDK encodes decodes to our stream item", () => {
    const bytes = A2AService.sendStreamingMessage.responseSerialize({
      payload: {
        $case: "statusUpdate",
        value: {
          taskId: "t",
          contextId: "c",
          status: { state: 2, message: undefined, timestamp: "2026-01-01T00:00:00.000Z" },
          metadata: undefined,
        },
      },
    });
    expect(codec.decode("lf.a2a.v1.StreamResponse", bytes)).toEqual({
      statusUpdate: {
        taskId: "t",
        contextId: "c",
        status: { state: "TASK_STATE_WORKING", timestamp: "2026-01-01T00:00:00.000Z" },
      },
    });
  });

  it("an AgentCard we encode is the card the SDK decodes", () => {
    const sdk = A2AService.getExtendedAgentCard.responseDeserialize(
      Buffer.from(codec.encode("lf.a2a.v1.AgentCard", card)),
    );
    expect(sdk.supportedInterfaces.map((i) => `${i.protocolBinding} ${i.url}`)).toEqual([
      "GRPC node-a.example:7443",
      "JSONRPC https://node-a.example:7443/a2a",
    ]);
    expect(sdk.capabilities?.extensions[0].params).toEqual({ k: "v" });
    expect(Object.keys(sdk.securitySchemes)).toEqual(["mtls"]);
    expect(sdk.signatures[0].header).toEqual({ kid: "k1" });
  });
});

describe("malformed input", () => {
  const decodeTask = (bytes: Uint8Array) => () => codec.decode("lf.a2a.v1.Task", bytes);

  it("a truncated message", () => {
    const bytes = codec.encode("lf.a2a.v1.Task", task);
    expect(decodeTask(bytes.subarray(0, bytes.length - 3))).toThrow(DecodeError);
  });

  it("a field with the wrong wire type", () => {
    const bytes = new BinaryWriter().tag(1, WireType.Varint).int32(5).finish(); // Task.id is a string
    expect(decodeTask(bytes)).toThrow(/Task.id: wire type 0/);
  });

  it("a length past the end of the input", () => {
    const bytes = new BinaryWriter().tag(3, WireType.LengthDelimited).uint32(1000).finish();
    expect(decodeTask(bytes)).toThrow(DecodeError);
  });

  it("a string that is not UTF-8", () => {
    const bytes = new BinaryWriter()
      .tag(1, WireType.LengthDelimited)
      .bytes(new Uint8Array([0xff, 0xfe]))
      .finish();
    expect(decodeTask(bytes)).toThrow(DecodeError);
  });

  it("Struct values nested past the depth limit are refused, not recursed into", () => {
    let value: unknown = "leaf";
    for (let i = 0; i < 200; i++) value = [value];
    const deep = new ProtoCodec(SCHEMA, { maxDepth: 1000 }).encode("lf.a2a.v1.Part", { data: value });
    expect(() => codec.decode("lf.a2a.v1.Part", deep)).toThrow(/nested deeper than 100/);
    expect(() => codec.encode("lf.a2a.v1.Part", { data: value })).toThrow(EncodeError);
  });

  it("unknown fields are skipped; an unknown enum number is kept as a number", () => {
    const w = new BinaryWriter();
    w.tag(1, WireType.LengthDelimited).string("t");
    w.tag(99, WireType.LengthDelimited).string("from a newer proto");
    w.tag(3, WireType.LengthDelimited).fork().tag(1, WireType.Varint).int32(42).join();
    expect(codec.decode("lf.a2a.v1.Task", w.finish())).toEqual({ id: "t", status: { state: 42 } });
  });

  it("repeated numbers are read packed or not (a2a.proto has none; a one-field schema stands in)", () => {
    const numbers = new ProtoCodec({
      messages: {
        "t.M": {
          name: "t.M",
          fields: [{ name: "n", json: "n", no: 1, kind: "scalar", type: "int32", repeated: true }],
        },
      },
      enums: {},
      services: {},
    });
    const packed = new BinaryWriter().tag(1, WireType.LengthDelimited).fork().int32(1).int32(-2).int32(300).join();
    packed.tag(1, WireType.Varint).int32(7);
    expect(numbers.decode("t.M", packed.finish())).toEqual({ n: [1, -2, 300, 7] });
  });

  it("a singular field with a length-delimited wire type is refused", () => {
    const w = new BinaryWriter()
      .tag(4, WireType.LengthDelimited)
      .uint32(1)
      .raw(new Uint8Array([1]))
      .finish();
    expect(() => codec.decode("lf.a2a.v1.ListTasksRequest", w)).toThrow(/page_size: wire type 2/);
  });

  it("values that do not fit their fields name the field", () => {
    expect(() => codec.encode("lf.a2a.v1.Task", { id: 5 })).toThrow(/Task.id: expected a string/);
    expect(() => codec.encode("lf.a2a.v1.Task", { id: "t", status: { state: "DONE" } })).toThrow(
      /"DONE" is not a value of lf.a2a.v1.TaskState/,
    );
    expect(() => codec.encode("lf.a2a.v1.GetTaskRequest", { id: "t", historyLength: 2 ** 31 })).toThrow(
      /historyLength: expected an integer/,
    );
    expect(() => codec.encode("lf.a2a.v1.Part", { raw: "not base64!" })).toThrow(/raw: not base64/);
    expect(() => codec.encode("lf.a2a.v1.TaskStatus", { state: "TASK_STATE_WORKING", timestamp: "yesterday" })).toThrow(
      /RFC 3339/,
    );
    expect(() => codec.encode("lf.a2a.v1.Message", { messageId: "m", parts: {} })).toThrow(/parts: expected an array/);
  });
});
