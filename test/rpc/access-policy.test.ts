import { describe, expect, it } from "vitest";
import { allows, skillOf, type AccessRule } from "../../src/rpc/access-policy";
import { readAuthorization } from "../../src/settings/authorization";
import { SettingProblem } from "../../src/settings/kinds";

describe("the access policy", () => {
  const rules: AccessRule[] = [
    { peers: ["beta"], methods: ["*"] },
    { peers: ["gamma"], methods: ["GetTask", "ListTasks"] },
    { peers: ["delta"], methods: ["SendMessage", "GetTask"], skills: ["summarise"] },
    { peers: ["*"], methods: ["GetExtendedAgentCard"] },
  ];

  it("without rules lets every peer call everything (the behaviour before there was a policy)", () => {
    expect(allows([], "anyone", "SendMessage", undefined)).toBe(true);
    expect(allows([], "anyone", "CancelTask", "x")).toBe(true);
  });

  it("lets a call through only if one rule names its peer (or *) and its method (or *)", () => {
    expect(allows(rules, "beta", "SendMessage", undefined)).toBe(true);
    expect(allows(rules, "beta", "DeleteTaskPushNotificationConfig", undefined)).toBe(true);
    expect(allows(rules, "gamma", "GetTask", undefined)).toBe(true);
    expect(allows(rules, "gamma", "SendMessage", undefined)).toBe(false);
    expect(allows(rules, "gamma", "CancelTask", undefined)).toBe(false);
    expect(allows(rules, "epsilon", "GetTask", undefined)).toBe(false);
    expect(allows(rules, "epsilon", "GetExtendedAgentCard", undefined)).toBe(true);
    // Names compare exactly: a certificate's CN is never folded into a listed name.
    expect(allows(rules, "Beta", "SendMessage", undefined)).toBe(false);
  });

  it("with skills, lets messages through only for those skills, and other methods regardless", () => {
    expect(allows(rules, "delta", "SendMessage", "summarise")).toBe(true);
    expect(allows(rules, "delta", "SendMessage", "analyse-logs")).toBe(false);
    expect(allows(rules, "delta", "SendMessage", undefined)).toBe(false);
    expect(allows(rules, "delta", "GetTask", undefined)).toBe(true);
    expect(allows(rules, "delta", "SendStreamingMessage", "summarise")).toBe(false);
    expect(allows([{ peers: ["*"], methods: ["*"], skills: ["*"] }], "x", "SendMessage", undefined)).toBe(true);
  });

  it("reads the skill where the executor does: message.metadata.skill, a non-empty string", () => {
    const m = (metadata?: Record<string, unknown>) =>
      ({ messageId: "m", role: "ROLE_USER", parts: [{ text: "t" }], metadata }) as never;
    expect(skillOf(m({ skill: "summarise" }))).toBe("summarise");
    expect(skillOf(m({ skill: "" }))).toBeUndefined();
    expect(skillOf(m({ skill: 3 }))).toBeUndefined();
    expect(skillOf(m())).toBeUndefined();
  });
});

describe("[[authorize]] in the config file", () => {
  const problem = (v: unknown) => {
    try {
      readAuthorization(v);
    } catch (err) {
      expect(err).toBeInstanceOf(SettingProblem);
      return (err as Error).message;
    }
    throw new Error("accepted");
  };

  it("reads rules as written", () => {
    expect(
      readAuthorization([
        { peers: ["*"], methods: ["GetTask"] },
        { peers: ["beta"], methods: ["SendMessage"], skills: ["summarise"] },
      ]),
    ).toEqual([
      { peers: ["*"], methods: ["GetTask"] },
      { peers: ["beta"], methods: ["SendMessage"], skills: ["summarise"] },
    ]);
  });

  it("refuses shapes, methods and names that would make a rule match nothing, each named", () => {
    expect(problem({ peers: ["a"] })).toMatch(/must be an array of \[\[authorize\]\] tables/);
    expect(problem(["x"])).toBe("entry 1: must be a table");
    expect(problem([{ peers: ["a"], methods: ["GetTask"], who: 1 }])).toBe(
      "entry 1: unknown key 'who' (known: peers, methods, skills)",
    );
    expect(problem([{ methods: ["GetTask"] }])).toBe('entry 1: peers is missing: list them, or write ["*"] for all');
    expect(problem([{ peers: ["a"] }])).toBe('entry 1: methods is missing: list them, or write ["*"] for all');
    expect(problem([{ peers: [], methods: ["GetTask"] }])).toMatch(/^entry 1: peers must be a non-empty list/);
    expect(problem([{ peers: "beta", methods: ["GetTask"] }])).toMatch(/^entry 1: peers must be a non-empty list/);
    expect(problem([{ peers: ["beta"], methods: ["GetTask"], skills: [1] }])).toMatch(
      /^entry 1: skills must be a non-empty list of non-empty strings/,
    );
    expect(
      problem([
        { peers: ["*"], methods: ["*"] },
        { peers: ["beta"], methods: ["GetTasks"] },
      ]),
    ).toMatch(
      /^entry 2: unknown method 'GetTasks' \(known: SendMessage, SendStreamingMessage, GetTask, .*GetExtendedAgentCard, or "\*"\)$/,
    );
    expect(problem([{ peers: ["beta"], methods: ["message/send"] }])).toBe(
      "entry 1: method 'message/send' is a v0.3 name; write 'SendMessage' (a v0.3 call is judged as the v1.0 operation it runs)",
    );
    expect(problem([{ peers: ["Beta"], methods: ["GetTask"] }])).toMatch(
      /^entry 1: peer 'Beta' is not a fleet name: .*lower case/,
    );
    expect(problem([{ peers: ["local"], methods: ["GetTask"] }])).toMatch(
      /^entry 1: peer 'local' is not a fleet name: .*reserved/,
    );
    // A token listener's caller is written as the node knows it; the name after 'token:' is checked alike.
    expect(readAuthorization([{ peers: ["token:hermes"], methods: ["GetTask"] }])).toEqual([
      { peers: ["token:hermes"], methods: ["GetTask"] },
    ]);
    expect(problem([{ peers: ["token:Her mes"], methods: ["GetTask"] }])).toMatch(
      /^entry 1: peer 'token:Her mes' is not a fleet name after 'token:'/,
    );
  });
});

describe("[[authorize]] with [[skills]]", () => {
  it("refuses a rule for a skill the node does not declare (it could never match)", async () => {
    const { resolveSettings } = await import("../../src/config");
    const resolveServeConfig = (...args: Parameters<typeof resolveSettings>) => resolveSettings(...args).config;
    const skills = [{ id: "summarise", name: "S", description: "d", tags: [] }];
    const authorize = [{ peers: ["beta"], methods: ["SendMessage"], skills: ["summarize"] }];
    expect(() => resolveServeConfig({}, {}, { skills, authorize })).toThrow(
      "authorize entry 1: skill 'summarize' is not one of this node's [[skills]] (summarise)",
    );
    expect(
      resolveServeConfig({}, {}, { skills, authorize: [{ ...authorize[0], skills: ["summarise", "*"] }] }).authorize[0]
        .skills,
    ).toEqual(["summarise", "*"]);
  });
});
