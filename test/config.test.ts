import { afterAll, describe, expect, it } from "vitest";
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DEFAULTS, loadConfigFile, redacted, resolveServeConfig } from "../src/config";
import { UsageError } from "../src/cli/errors";

const dir = mkdtempSync(join(tmpdir(), "a2a-config-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const file = (name: string, text: string) => {
  const p = join(dir, name);
  writeFileSync(p, text);
  return p;
};

describe("configuration", () => {
  it("the shipped example config loads, and every key in it takes effect", () => {
    const c = resolveServeConfig({}, {}, loadConfigFile(join(import.meta.dirname, "..", "scripts", "config.example.toml"), true));
    expect(c.port).toBe(9443);
    expect(c.description).toContain("GPU box");
    expect(c.skills?.map((s) => s.id)).toEqual(["summarise", "analyse-logs"]);
    expect(c.deadlineMs).toBe(3_600_000);
    expect(c.shutdownGraceMs).toBe(10_000);
    expect(c.maxTasksPerContext).toBe(100);
    expect(c.skillModels).toEqual({ summarise: { model: "llama3.2", systemPrompt: "Summarise in at most three short bullet points.", temperature: 0.1 } });
  });

  it("orders defaults < file < environment < flags", () => {
    const f = loadConfigFile(file("order.toml", "port = 1111\nmodel = \"from-file\"\nexecutor = \"echo\"\n"), true);
    expect(resolveServeConfig({}, {}, f)).toMatchObject({ port: 1111, model: "from-file", executor: "echo" });
    expect(resolveServeConfig({}, { A2A_NODE_PORT: "2222", A2A_NODE_MODEL: "from-env" }, f)).toMatchObject({ port: 2222, model: "from-env" });
    expect(resolveServeConfig({ port: 3333, model: "from-flag" }, { A2A_NODE_PORT: "2222" }, f)).toMatchObject({ port: 3333, model: "from-flag" });
    expect(resolveServeConfig({}, {}, {}).maxBodyBytes).toBe(DEFAULTS.maxBodyBytes);
  });

  it.each([
    ["unknown.toml", "prot = 1\n", "unknown key 'prot'"],
    ["bad.toml", "port = = 1\n", "is not valid TOML"],
    ["skills.toml", "[[skills]]\nid = \"x\"\n", "skills[0].name must be a non-empty string"],
    ["allow.toml", "push_allow = [1]\n", "push_allow must be a list"],
  ])("%s is refused with a clear error", (name, text, message) => {
    expect(() => loadConfigFile(file(name, text), true)).toThrow(message);
  });

  it("a missing file is an error only when named explicitly", () => {
    expect(loadConfigFile(join(dir, "nope.toml"), false)).toEqual({});
    expect(() => loadConfigFile(join(dir, "nope.toml"), true)).toThrow(UsageError);
  });

  it.each([
    [{ executor: "gpt" }, "--executor must be one of"],
    [{ port: 70000 }, "--port must be 0-65535"],
    [{ maxBody: 10 }, "--max-body must be"],
    [{ modelUrl: "ftp://x" }, "--model-url must be an http(s) URL"],
    [{ deadline: 0 }, "--deadline must be a positive"],
    [{ outputCap: 5 }, "--output-cap must be"],
    [{ plainHttpPort: -1 }, "--plain-http-port must be 0-65535"],
  ])("flags %j are refused: %s", (flags, message) => {
    expect(() => resolveServeConfig(flags as never, {})).toThrow(message);
  });

  it("reads an API key from a 0600 file, refuses a readable one, and never shows it", () => {
    const key = file("key", "sk-secret\n");
    chmodSync(key, 0o644);
    expect(() => resolveServeConfig({ modelApiKeyFile: key }, {})).toThrow(`chmod 600 ${key}`);
    chmodSync(key, 0o600);
    const c = resolveServeConfig({ modelApiKeyFile: key }, {});
    expect(c.modelApiKey).toBe("sk-secret");
    expect(JSON.stringify(redacted(c))).not.toContain("sk-secret");
    expect(redacted(c).modelApiKey).toBe("(set)");
  });
});
