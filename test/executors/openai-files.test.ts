/**
 * Files in tasks for the OpenAI-compatible executor, against the fake model server (a twin of the
 * chat-completions API's checks on content parts): text files go as text, images as image_url data: URLs,
 * everything else is refused before a task exists; a model that cannot see images fails the task saying so.
 */
import { afterEach, describe, expect, it } from "vitest";
import { OpenAiCompatibleExecutor } from "../../src/executors/openai-executor";
import type { ExecutionEvents, ExecutionRequest } from "../../src/executors/executor";
import type { Message, Part } from "../../src/protocol/types";
import { startFakeModel, type FakeModel, type FakeModelOptions } from "../fakes/openai";

const models: FakeModel[] = [];
function fake(options: FakeModelOptions = {}): FakeModel {
  const m = startFakeModel(options);
  models.push(m);
  return m;
}
afterEach(() => {
  for (const m of models.splice(0)) m.stop();
});

const b64 = (s: string | Uint8Array) => Buffer.from(s).toString("base64");
/** The 8-byte PNG signature and a little more: enough for a media type, the fake does not decode images. */
const PNG = b64(new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13]));

const message = (parts: Part[], role: Message["role"] = "ROLE_USER"): Message => ({
  messageId: crypto.randomUUID(),
  role,
  parts,
});
const events: ExecutionEvents = { progress: () => {}, artifact: () => {}, note: async () => {} };
function request(msg: Message, history: Message[] = []): ExecutionRequest {
  return {
    taskId: "T1",
    contextId: "C1",
    message: msg,
    history: async () => history,
    caller: "alpha",
    signal: new AbortController().signal,
    events,
    metadata: {},
    state: {},
    resumed: false,
    input: () => Promise.reject(new Error("no questions")),
  };
}
const executor = (model: FakeModel) => new OpenAiCompatibleExecutor({ baseUrl: model.url, model: "m", retryBaseMs: 5 });

describe("files for an OpenAI-compatible model", () => {
  it("passes a text file as text, under a line naming it, and the content stays a string", async () => {
    const model = fake();
    const msg = message([
      { text: "summarise" },
      { raw: b64("line one\nline two ✓\n"), filename: "notes.md", mediaType: "text/markdown" },
    ]);
    const ex = executor(model);
    expect(ex.check(msg)).toBeUndefined();
    expect((await ex.execute(request(msg))).state).toBe("TASK_STATE_COMPLETED");
    expect(model.requests[0]!.body.messages.at(-1)).toEqual({
      role: "user",
      content: "summarise\nFile notes.md (text/markdown):\nline one\nline two ✓\n",
    });
  });

  it("guesses a text type from the file name or the bytes when the part names none", async () => {
    const model = fake();
    const msg = message([
      { text: "read" },
      { raw: b64('{"a":1}'), filename: "data.json" },
      { raw: b64("plain words"), filename: "README" },
    ]);
    expect(executor(model).check(msg)).toBeUndefined();
    await executor(model).execute(request(msg));
    expect(model.requests[0]!.body.messages.at(-1).content).toBe(
      'read\nFile data.json (application/json):\n{"a":1}\nFile README (text/plain):\nplain words',
    );
  });

  it("passes an image as an image_url part with a data: URL, after the text", async () => {
    const model = fake();
    const msg = message([{ text: "what is in it?" }, { raw: PNG, filename: "chart.png", mediaType: "image/png" }]);
    expect((await executor(model).execute(request(msg))).state).toBe("TASK_STATE_COMPLETED");
    expect(model.requests[0]!.body.messages.at(-1)).toEqual({
      role: "user",
      content: [
        { type: "text", text: "what is in it?" },
        { type: "image_url", image_url: { url: `data:image/png;base64,${PNG}` } },
      ],
    });
  });

  it("names an earlier turn's image instead of sending it again", async () => {
    const model = fake();
    const earlier = message([{ text: "look" }, { raw: PNG, filename: "old.png", mediaType: "image/png" }]);
    await executor(model).execute(request(message([{ text: "and now?" }]), [earlier]));
    expect(model.requests[0]!.body.messages).toEqual([
      { role: "user", content: "look\n[image old.png, sent with an earlier message]" },
      { role: "user", content: "and now?" },
    ]);
  });

  it("fails the task saying the model may not take images, when the model refuses them (HTTP 400)", async () => {
    const model = fake({ vision: false });
    const outcome = await executor(model).execute(
      request(message([{ text: "see" }, { raw: PNG, filename: "a.png", mediaType: "image/png" }])),
    );
    expect(outcome.state).toBe("TASK_STATE_FAILED");
    expect(outcome.message).toContain("answered HTTP 400");
    expect(outcome.message).toContain("image_url is only supported by certain models");
    expect(outcome.message).toContain("does model 'm' take images?");
  });

  it.each([
    [
      "a PDF",
      { raw: b64("%PDF-1.7"), filename: "report.pdf", mediaType: "application/pdf" },
      /report\.pdf \(application\/pdf\); this agent's model takes text, JSON data, text files and images \(png, jpeg, gif, webp\)/,
    ],
    [
      "an image type models do not take",
      { raw: b64("BM"), filename: "a.bmp", mediaType: "image/bmp" },
      /a\.bmp \(image\/bmp\)/,
    ],
    ["a file by URL", { url: "https://example.com/a.png", mediaType: "image/png" }, /file by URL/],
    [
      "text that is not UTF-8",
      { raw: b64(new Uint8Array([0xff, 0xfe, 0x00, 0x41])), filename: "x.txt", mediaType: "text/plain" },
      /says text\/plain but is not UTF-8 text/,
    ],
    [
      "unknown binary bytes",
      { raw: b64(new Uint8Array([0, 1, 2, 3])), filename: "blob" },
      /blob \(application\/octet-stream\)/,
    ],
  ])("refuses %s as content it cannot take (-32005), naming the file and what is taken", (_label, part, why) => {
    const refusal = new OpenAiCompatibleExecutor({ baseUrl: "http://127.0.0.1:1/v1", model: "m" }).check(
      message([{ text: "x" }, part as Part]),
    );
    expect(refusal?.kind).toBe("content-type");
    expect(refusal?.message).toMatch(/^part 1 /);
    expect(refusal?.message).toMatch(why);
  });
});

describe("the fake model checks content parts as OpenAI's API does", () => {
  async function ask(model: FakeModel, messages: unknown) {
    const res = await fetch(`${model.url}/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ model: "m", messages }),
    });
    return { status: res.status, body: (await res.json()) as any };
  }

  it.each([
    ["no messages", [], "messages", "empty_array"],
    ["an unknown role", [{ role: "robot", content: "x" }], "messages[0].role", "invalid_value"],
    [
      "an unknown part type",
      [{ role: "user", content: [{ type: "pdf", data: "x" }] }],
      "messages[0].content[0].type",
      "invalid_value",
    ],
    [
      "a text part without text",
      [{ role: "user", content: [{ type: "text" }] }],
      "messages[0].content[0].text",
      "invalid_type",
    ],
    [
      "an image without url",
      [{ role: "user", content: [{ type: "image_url", image_url: {} }] }],
      "messages[0].content[0].image_url.url",
      "missing_required_parameter",
    ],
    [
      "a data: URL of a PDF",
      [{ role: "user", content: [{ type: "image_url", image_url: { url: "data:application/pdf;base64,JVBE" } }] }],
      "messages[0].content[0].image_url.url",
      "invalid_value",
    ],
    [
      "an image from the assistant",
      [{ role: "assistant", content: [{ type: "image_url", image_url: { url: `data:image/png;base64,${PNG}` } }] }],
      "messages[0].content[0].type",
      "invalid_value",
    ],
  ])("refuses %s with HTTP 400 and an invalid_request_error", async (_label, messages, param, code) => {
    const r = await ask(fake(), messages);
    expect(r.status).toBe(400);
    expect(r.body.error).toMatchObject({ type: "invalid_request_error", param, code });
    expect(r.body.error.message).toEqual(expect.any(String));
  });

  it("takes text and image parts from a user, and a vision-less model refuses only the image", async () => {
    const messages = [
      {
        role: "user",
        content: [
          { type: "text", text: "hi" },
          { type: "image_url", image_url: { url: `data:image/png;base64,${PNG}` } },
        ],
      },
    ];
    const ok = await ask(fake({ reply: (m) => `saw: ${m[0]!.content}` }), messages);
    expect(ok.status).toBe(200);
    expect(ok.body.choices[0].message.content).toBe("saw: hi");
    const blind = await ask(fake({ vision: false }), messages);
    expect(blind.status).toBe(400);
    expect(blind.body.error).toEqual({
      message: "Invalid content type. image_url is only supported by certain models.",
      type: "invalid_request_error",
      param: "messages.[0].content.[1].type",
      code: null,
    });
  });
});
