import { describe, expect, it } from "vitest";
import { ATTR, filterAttributes, isAllowedAttribute, MAX_ATTRIBUTE_LENGTH } from "../../src/tracing/attributes";
import { encodeExportRequest } from "../../src/tracing/otlp-json";
import { ParentBasedRatioSampler } from "../../src/tracing/sampler";
import type { FinishedSpan } from "../../src/tracing/span";
import { RecordingTracer } from "../../src/tracing/tracer";

/**
 * The names a key would have if it carried what must never leave the node: message and artifact text, prompts
 * and completions, file contents, tokens, keys, passwords, headers, full URLs with their queries. Token
 * COUNTS (gen_ai.usage.*_tokens) are numbers and allowed.
 */
const CARRIES_CONTENT_OR_SECRET =
  /(^|[._])(messages?|prompt|completion|content|text|parts?|artifacts?|body|secret|password|authorization|cookie|headers?|api_key|key|token|query)($|[._])|url\.full/;

describe("the attribute allow-list", () => {
  it("names no key that could carry message text or a secret", () => {
    const bad = Object.values(ATTR).filter((k) => CARRIES_CONTENT_OR_SECRET.test(k));
    expect(bad).toEqual([]);
  });

  it("drops what is not on the list, and says how many", () => {
    const secret = "sk-live-0123456789abcdef";
    const { attributes, dropped } = filterAttributes({
      [ATTR.a2aTaskId]: "01JD3Q6W1V7Y2T3M4N5P6Q7R8S",
      [ATTR.genAiRequestModel]: "llama3",
      "a2a.message.text": "summarise the secret plan",
      "gen_ai.input.messages": '[{"role":"user"}]',
      "gen_ai.prompt": "hello",
      "http.request.header.authorization": `Bearer ${secret}`,
      "url.full": "https://x.example/a2a?token=abc",
      "a2a.token": secret,
    });
    expect(attributes).toEqual({ [ATTR.a2aTaskId]: "01JD3Q6W1V7Y2T3M4N5P6Q7R8S", [ATTR.genAiRequestModel]: "llama3" });
    expect(dropped).toBe(6);
  });

  it("drops values that are not strings, finite numbers or booleans, and cuts long strings", () => {
    const { attributes, dropped } = filterAttributes({
      [ATTR.httpStatus]: Number.NaN,
      [ATTR.a2aPeer]: { name: "beta" },
      [ATTR.serverPort]: 9443,
      [ATTR.a2aContextId]: "c".repeat(MAX_ATTRIBUTE_LENGTH + 50),
    });
    expect(attributes[ATTR.serverPort]).toBe(9443);
    expect(attributes[ATTR.a2aContextId]).toHaveLength(MAX_ATTRIBUTE_LENGTH);
    expect(dropped).toBe(2);
    expect(isAllowedAttribute(ATTR.a2aTaskState)).toBe(true);
  });

  it("keeps message text and secrets out of what a recorded span exports", () => {
    const ended: FinishedSpan[] = [];
    const tracer = new RecordingTracer(new ParentBasedRatioSampler(1), { onEnd: (s) => ended.push(s) });
    const span = tracer.startSpan("SendMessage", {
      attributes: { [ATTR.rpcMethod]: "SendMessage", "a2a.message.text": "TOP-SECRET-TEXT" },
    });
    span
      .setAttribute("authorization", "Bearer TOP-SECRET-TOKEN")
      .setAttributes({ [ATTR.a2aTaskState]: "completed", "gen_ai.output.messages": "TOP-SECRET-ANSWER" });
    span.end();
    const wire = encodeExportRequest(ended, { "service.name": "a2a-node" });
    expect(wire).not.toMatch(/TOP-SECRET/);
    expect(JSON.parse(wire).resourceSpans[0].scopeSpans[0].spans[0]).toMatchObject({
      name: "SendMessage",
      droppedAttributesCount: 3,
    });
    expect(ended[0].attributes).toEqual({ [ATTR.rpcMethod]: "SendMessage", [ATTR.a2aTaskState]: "completed" });
  });
});
