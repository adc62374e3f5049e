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
    expect(c.maxListBytes).toBe(1_048_576);
    expect([c.pushConcurrency, c.pushHostConcurrency, c.pushCallerConcurrency, c.pushTimeoutMs]).toEqual([8, 2, 4, 10_000]);
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

  it("reads the webhook delivery limits from the file (timeout in seconds), and flags override them", () => {
    const f = loadConfigFile(
      file("push.toml", "push_concurrency = 16\npush_host_concurrency = 3\npush_caller_concurrency = 5\npush_timeout_seconds = 2.5\n"),
      true,
    );
    expect(resolveServeConfig({}, {}, f)).toMatchObject({ pushConcurrency: 16, pushHostConcurrency: 3, pushCallerConcurrency: 5, pushTimeoutMs: 2500 });
    expect(resolveServeConfig({ pushConcurrency: 1, pushHostConcurrency: 1, pushCallerConcurrency: 1, pushTimeout: 30 }, {}, f)).toMatchObject({
      pushConcurrency: 1,
      pushHostConcurrency: 1,
      pushCallerConcurrency: 1,
      pushTimeoutMs: 30_000,
    });
    expect(resolveServeConfig({}, {}, {})).toMatchObject({ pushConcurrency: 8, pushHostConcurrency: 2, pushCallerConcurrency: 4, pushTimeoutMs: 10_000 });
  });

  it.each([
    ["push_concurrency = 0\n", "--push-concurrency (push_concurrency) must be a whole number 1-1000 (got 0)"],
    ["push_host_concurrency = 1.5\n", "--push-host-concurrency (push_host_concurrency) must be a whole number 1-1000 (got 1.5)"],
    ["push_caller_concurrency = \"4\"\n", "--push-caller-concurrency (push_caller_concurrency) must be a whole number 1-1000 (got 4)"],
    ["push_timeout_seconds = 0\n", "--push-timeout (push_timeout_seconds) must be 0.1-300 seconds (got 0)"],
    ["push_timeout_seconds = \"soon\"\n", "--push-timeout (push_timeout_seconds) must be 0.1-300 seconds (got NaN)"],
    ["push_timeout_seconds = 301\n", "--push-timeout (push_timeout_seconds) must be 0.1-300 seconds (got 301)"],
  ])("the push setting %j is refused, naming the flag and the key", (text, message) => {
    expect(() => resolveServeConfig({}, {}, loadConfigFile(file("bad-push.toml", text), true))).toThrow(message);
  });

  it("reads max_list_bytes from the file, A2A_NODE_MAX_LIST_BYTES over it, --max-list-bytes over both; 1 MiB by default", () => {
    const f = loadConfigFile(file("list.toml", "max_list_bytes = 65536\n"), true);
    expect(resolveServeConfig({}, {}, {}).maxListBytes).toBe(1024 * 1024);
    expect(resolveServeConfig({}, {}, f).maxListBytes).toBe(65536);
    expect(resolveServeConfig({}, { A2A_NODE_MAX_LIST_BYTES: "131072" }, f).maxListBytes).toBe(131072);
    expect(resolveServeConfig({ maxListBytes: 262144 }, { A2A_NODE_MAX_LIST_BYTES: "131072" }, f).maxListBytes).toBe(262144);
  });

  it.each([
    [{}, { A2A_NODE_MAX_LIST_BYTES: "lots" }, "A2A_NODE_MAX_LIST_BYTES must be a number (got 'lots')"],
    [{ maxListBytes: 16383 }, {}, "--max-list-bytes (max_list_bytes) must be a whole number of bytes, 16384-268435456 (got 16383)"],
    [{ maxListBytes: 268435457 }, {}, "(got 268435457)"],
    [{ maxListBytes: 65536.5 }, {}, "(got 65536.5)"],
    [{}, { A2A_NODE_MAX_LIST_BYTES: "-1" }, "(got -1)"],
  ])("max list bytes %j %j is refused", (flags, env, message) => {
    expect(() => resolveServeConfig(flags, env)).toThrow(message);
  });

  it("refuses a max_list_bytes in the file that is not a number, naming the key", () => {
    expect(() => resolveServeConfig({}, {}, loadConfigFile(file("list-bad.toml", 'max_list_bytes = "1M"\n'), true))).toThrow(
      "--max-list-bytes (max_list_bytes) must be a whole number of bytes",
    );
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
    [{ pushConcurrency: 1001 }, "--push-concurrency (push_concurrency) must be a whole number 1-1000"],
    [{ pushHostConcurrency: -1 }, "--push-host-concurrency (push_host_concurrency) must be"],
    [{ pushCallerConcurrency: 0 }, "--push-caller-concurrency (push_caller_concurrency) must be"],
    [{ pushTimeout: 0.05 }, "--push-timeout (push_timeout_seconds) must be 0.1-300 seconds (got 0.05)"],
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
