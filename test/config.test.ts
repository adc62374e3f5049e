import { describe, expect, it } from "vitest";
import { chmodSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import {
  ConfigError,
  DEFAULTS,
  loadConfigFile,
  redacted,
  resolveSettings,
  SETTINGS,
  type SettingName,
} from "../src/config";
import { settingFlags, settingsHelp } from "../src/cli/settings-text";
import type { Setting } from "../src/settings/kinds";
import { tempDir } from "./helpers/temp-dir";

const dir = tempDir("a2a-config-");
const file = (name: string, text: string) => {
  const p = join(dir, name);
  writeFileSync(p, text);
  return p;
};
const EXAMPLE = join(import.meta.dirname, "..", "scripts", "config.example.toml");
const NAMES = Object.keys(SETTINGS) as SettingName[];
const setting = (n: SettingName) => SETTINGS[n] as Setting<unknown>;
const resolveServeConfig = (...args: Parameters<typeof resolveSettings>) => resolveSettings(...args).config;

describe("configuration", () => {
  it("the shipped example config loads, and every key in it takes effect", () => {
    const c = resolveServeConfig({}, {}, loadConfigFile(EXAMPLE, true));
    expect(c.port).toBe(9443);
    expect(c.description).toContain("GPU box");
    expect(c.skills?.map((s) => s.id)).toEqual(["summarise", "analyse-logs"]);
    expect(c.skills?.[0]).not.toHaveProperty("model");
    expect(c.deadlineMs).toBe(3_600_000);
    expect(c.shutdownGraceMs).toBe(10_000);
    expect(c.maxTasksPerContext).toBe(100);
    expect(c.maxListBytes).toBe(262_144);
    expect([c.pushConcurrency, c.pushHostConcurrency, c.pushCallerConcurrency, c.pushTimeoutMs]).toEqual([
      8, 2, 4, 10_000,
    ]);
    expect(c.skillModels).toEqual({
      summarise: {
        model: "llama3.2",
        systemPrompt: "Summarise in at most three short bullet points.",
        temperature: 0.1,
      },
    });
  });

  it("orders defaults < file < environment < flags, and says where each value came from", () => {
    const f = loadConfigFile(file("order.toml", 'port = 1111\nmodel = "from-file"\nexecutor = "echo"\n'), true);
    expect(resolveServeConfig({}, {}, f)).toMatchObject({ port: 1111, model: "from-file", executor: "echo" });
    expect(resolveServeConfig({}, { A2A_NODE_PORT: "2222", A2A_NODE_MODEL: "from-env" }, f)).toMatchObject({
      port: 2222,
      model: "from-env",
    });
    const { config, sources } = resolveSettings({ port: "3333", model: "from-flag" }, { A2A_NODE_PORT: "2222" }, f);
    expect(config).toMatchObject({
      port: 3333,
      model: "from-flag",
      executor: "echo",
      maxBodyBytes: DEFAULTS.maxBodyBytes,
    });
    expect(sources).toMatchObject({ port: "flag", model: "flag", executor: "file", maxBodyBytes: "default" });
    expect(resolveSettings({}, { A2A_NODE_PORT: "2222" }, f).sources.port).toBe("A2A_NODE_PORT");
  });

  it("an empty environment variable counts as unset", () => {
    expect(resolveServeConfig({}, { A2A_NODE_PORT: "" }).port).toBe(DEFAULTS.port);
  });

  it("every setting with a flag can be set by flag, environment and file alike (seconds in, milliseconds held)", () => {
    const f = loadConfigFile(
      file(
        "push.toml",
        "push_concurrency = 16\npush_host_concurrency = 3\npush_caller_concurrency = 5\npush_timeout_seconds = 2.5\n",
      ),
      true,
    );
    expect(resolveServeConfig({}, {}, f)).toMatchObject({
      pushConcurrency: 16,
      pushHostConcurrency: 3,
      pushCallerConcurrency: 5,
      pushTimeoutMs: 2500,
    });
    expect(
      resolveServeConfig({ "push-concurrency": "1", "push-timeout": "30" }, { A2A_NODE_PUSH_HOST_CONCURRENCY: "7" }, f),
    ).toMatchObject({
      pushConcurrency: 1,
      pushHostConcurrency: 7,
      pushCallerConcurrency: 5,
      pushTimeoutMs: 30_000,
    });
    expect(resolveServeConfig({ deadline: "5", "shutdown-grace": "0" }, {})).toMatchObject({
      deadlineMs: 5000,
      shutdownGraceMs: 0,
    });
  });

  it("a list setting takes a TOML array, a comma-separated variable, or a repeated flag", () => {
    expect(
      resolveServeConfig({}, {}, loadConfigFile(file("allow.toml", 'push_allow = ["10.0.0.2:8080"]\n'), true))
        .pushAllow,
    ).toEqual(["10.0.0.2:8080"]);
    expect(resolveServeConfig({}, { A2A_NODE_PUSH_ALLOW: "a.lan, B.lan:81" }).pushAllow).toEqual(["a.lan", "b.lan:81"]);
    expect(
      resolveServeConfig({ "push-allow": ["x.lan", "y.lan"] }, { A2A_NODE_PUSH_ALLOW: "a.lan" }).pushAllow,
    ).toEqual(["x.lan", "y.lan"]);
    expect(resolveServeConfig({ "push-allow": [] }, {}).pushAllow).toEqual([]);
  });

  it.each([
    ["unknown.toml", "prot = 1\n", "config file FILE: unknown key 'prot' (known: host, port,"],
    ["bad.toml", "port = = 1\n", "config file FILE is not valid TOML"],
    ["port.toml", "port = 70000\n", "config file FILE: port must be a whole number 0-65535 (got 70000)"],
    ["type.toml", 'max_concurrent = "4"\n', "config file FILE: max_concurrent must be a number (got '4')"],
    ["share.toml", "caller_share = 0\n", "config file FILE: caller_share must be above 0 and at most 1 (got 0)"],
    [
      "exec.toml",
      'executor = "gpt"\n',
      "config file FILE: executor must be one of echo, openai, hermes, conformance (got 'gpt')",
    ],
    ["url.toml", 'model_url = "ftp://x"\n', "config file FILE: model_url must be an http(s) URL (got 'ftp://x')"],
    [
      "timeout.toml",
      "push_timeout_seconds = 301\n",
      "config file FILE: push_timeout_seconds must be 0.1-300 seconds (got 301)",
    ],
    [
      "soon.toml",
      'push_timeout_seconds = "soon"\n',
      "config file FILE: push_timeout_seconds must be a number (got 'soon')",
    ],
    ["allow.toml", "push_allow = [1]\n", "config file FILE: push_allow must be a list of strings (got [1])"],
    [
      "host.toml",
      'push_allow = ["http://x"]\n',
      `config file FILE: push_allow entries must be "host" or "host:port" (got 'http://x')`,
    ],
    ["skills.toml", '[[skills]]\nid = "x"\n', "config file FILE: skills entry 1: name must be a non-empty string"],
    [
      "skills2.toml",
      '[[skills]]\nid = "x"\nname = "X"\ndescription = "d"\nmodle = "m"\n',
      "config file FILE: skills entry 1: unknown key 'modle'",
    ],
    [
      "skills3.toml",
      '[[skills]]\nid = "x"\nname = "X"\ndescription = "d"\n[[skills]]\nid = "x"\nname = "Y"\ndescription = "e"\n',
      "skills entry 2: id 'x' is used by an earlier skill",
    ],
    [
      "secret.toml",
      'model_api_key_file = "/nonexistent/key"\n',
      "config file FILE: model_api_key_file names /nonexistent/key, which does not exist",
    ],
    [
      "ext-card.toml",
      "[extended_card]\n",
      "config file FILE: extended_card has neither description nor [[extended_card.skills]]",
    ],
    [
      "ext-card2.toml",
      '[extended_card]\ndescripton = "x"\n',
      "config file FILE: extended_card unknown key 'descripton' (known: description, skills)",
    ],
    [
      "ext-card3.toml",
      '[[extended_card.skills]]\nid = "x"\n',
      "config file FILE: extended_card skills (the [[extended_card.skills]] tables): entry 1: name must be a non-empty string",
    ],
    ["ext-card4.toml", 'extended_card = "yes"\n', "config file FILE: extended_card must be a table ([extended_card])"],
    [
      "exts.toml",
      '[[extensions]]\ndescription = "no uri"\n',
      "config file FILE: extensions entry 1: uri must be an absolute URI without spaces or commas",
    ],
    [
      "exts2.toml",
      '[[extensions]]\nuri = "a,b"\n',
      "config file FILE: extensions entry 1: uri must be an absolute URI",
    ],
    [
      "exts3.toml",
      '[[extensions]]\nuri = "urn:x"\n[[extensions]]\nuri = "urn:x"\n',
      "config file FILE: extensions entry 2: uri 'urn:x' is declared by an earlier entry",
    ],
    [
      "exts4.toml",
      '[[extensions]]\nuri = "urn:x"\nrequired = "yes"\n',
      "config file FILE: extensions entry 1: required must be true or false",
    ],
    [
      "exts5.toml",
      '[[extensions]]\nuri = "urn:x"\nparams = 3\n',
      "config file FILE: extensions entry 1: params must be a table",
    ],
    [
      "exts6.toml",
      '[[extensions]]\nuri = "urn:x"\nrequried = true\n',
      "config file FILE: extensions entry 1: unknown key 'requried'",
    ],
  ])("%s is refused, naming the file and the key", (name, text, message) => {
    const path = file(name, text);
    expect(() => loadConfigFile(path, true)).toThrow(message.replace("FILE", path));
    expect(() => loadConfigFile(path, true)).toThrow(ConfigError);
  });

  it("[extended_card] and [[extensions]]: read into the config, the fleet-only skills' models joined to the others; a skill id of the public card is refused", () => {
    const f = loadConfigFile(
      file(
        "ext-ok.toml",
        '[[skills]]\nid = "pub"\nname = "P"\ndescription = "p"\n\n[extended_card]\ndescription = "more"\n\n[[extended_card.skills]]\nid = "ops"\nname = "Ops"\ndescription = "o"\nmodel = "big"\n\n' +
          '[[extensions]]\nuri = "urn:example:sign:v1"\nrequired = true\nparams = { alg = "Ed25519" }\n',
      ),
      true,
    );
    const c = resolveServeConfig({}, {}, f);
    expect(c.extendedCard).toEqual({
      description: "more",
      skills: [{ id: "ops", name: "Ops", description: "o", tags: [] }],
    });
    expect(c.skillModels).toEqual({ ops: { model: "big" } });
    expect(c.extensions).toEqual([{ uri: "urn:example:sign:v1", required: true, params: { alg: "Ed25519" } }]);
    const clash = loadConfigFile(
      file("ext-clash.toml", '[[extended_card.skills]]\nid = "delegate"\nname = "D"\ndescription = "d"\n'),
      true,
    );
    expect(() => resolveServeConfig({}, {}, clash)).toThrow(
      "extended_card: skill id 'delegate' is already a skill of the public card; give the fleet-only skill another id",
    );
  });

  it("max_list_bytes: 256 KiB by default, from the file, A2A_NODE_MAX_LIST_BYTES over it, --max-list-bytes over both", () => {
    const f = loadConfigFile(file("list.toml", "max_list_bytes = 65536\n"), true);
    expect(resolveServeConfig({}, {}, {}).maxListBytes).toBe(256 * 1024);
    expect(resolveServeConfig({}, {}, f).maxListBytes).toBe(65536);
    expect(resolveServeConfig({}, { A2A_NODE_MAX_LIST_BYTES: "131072" }, f).maxListBytes).toBe(131072);
    expect(
      resolveServeConfig({ "max-list-bytes": "262144" }, { A2A_NODE_MAX_LIST_BYTES: "131072" }, f).maxListBytes,
    ).toBe(262144);
  });

  it.each([
    [{}, { A2A_NODE_MAX_LIST_BYTES: "lots" }, "A2A_NODE_MAX_LIST_BYTES must be a number (got 'lots')"],
    [{}, { A2A_NODE_MAX_LIST_BYTES: "-1" }, "A2A_NODE_MAX_LIST_BYTES must be a whole number 16384-268435456 (got -1)"],
    [{ "max-list-bytes": "16383" }, {}, "--max-list-bytes must be a whole number 16384-268435456 (got 16383)"],
    [{ "max-list-bytes": "268435457" }, {}, "--max-list-bytes must be a whole number 16384-268435456 (got 268435457)"],
    [{ "max-list-bytes": "65536.5" }, {}, "--max-list-bytes must be a whole number 16384-268435456 (got 65536.5)"],
  ])("max_list_bytes %j %j is refused: %s", (flags, env, message) => {
    expect(() => resolveServeConfig(flags, env)).toThrow(message);
  });

  it("refuses a max_list_bytes in the file that is not a number, naming the file and the key", () => {
    const path = file("list-bad.toml", 'max_list_bytes = "1M"\n');
    expect(() => loadConfigFile(path, true)).toThrow(`config file ${path}: max_list_bytes must be a number (got '1M')`);
  });

  it("a missing file is an error only when named explicitly", () => {
    expect(loadConfigFile(join(dir, "nope.toml"), false)).toEqual({});
    expect(() => loadConfigFile(join(dir, "nope.toml"), true)).toThrow(
      `config file ${join(dir, "nope.toml")} does not exist`,
    );
  });

  it.each([
    [{ executor: "gpt" }, "--executor must be one of echo, openai, hermes, conformance (got 'gpt')"],
    [{ port: "70000" }, "--port must be a whole number 0-65535 (got 70000)"],
    [{ port: "x" }, "--port must be a number (got 'x')"],
    [{ "max-body": "10" }, "--max-body must be a whole number 1024-1073741824 (got 10)"],
    [{ "model-url": "ftp://x" }, "--model-url must be an http(s) URL (got 'ftp://x')"],
    [{ deadline: "0" }, "--deadline must be 1-2592000 seconds (got 0)"],
    [{ "output-cap": "5" }, "--output-cap must be a whole number"],
    [{ "plain-http-port": "-1" }, "--plain-http-port must be a whole number 0-65535 (got -1)"],
    [{ "push-concurrency": "1001" }, "--push-concurrency must be a whole number 1-1000 (got 1001)"],
    [{ "push-host-concurrency": "1.5" }, "--push-host-concurrency must be a whole number 1-1000 (got 1.5)"],
    [{ "push-timeout": "0.05" }, "--push-timeout must be 0.1-300 seconds (got 0.05)"],
    [{ "caller-share": "1.5" }, "--caller-share must be above 0 and at most 1 (got 1.5)"],
  ])("flags %j are refused: %s", (flags, message) => {
    expect(() => resolveServeConfig(flags, {})).toThrow(message);
  });

  it.each([
    [{ A2A_NODE_PORT: "99999" }, "A2A_NODE_PORT must be a whole number 0-65535 (got 99999)"],
    [{ A2A_NODE_MAX_CONCURRENT: "many" }, "A2A_NODE_MAX_CONCURRENT must be a number (got 'many')"],
    [{ A2A_NODE_EXECUTOR: "gpt" }, "A2A_NODE_EXECUTOR must be one of"],
    [{ A2A_NODE_DEADLINE_SECONDS: "-1" }, "A2A_NODE_DEADLINE_SECONDS must be 1-2592000 seconds (got -1)"],
  ])("environment %j is refused, naming the variable, not a flag: %s", (env, message) => {
    expect(() => resolveServeConfig({}, env)).toThrow(message);
  });

  it("reads an API key from a 0600 file (flag or file key) or the environment, refuses a readable file, and never shows it", () => {
    const key = file("key", "sk-secret\n");
    chmodSync(key, 0o644);
    expect(() => resolveServeConfig({ "model-api-key-file": key }, {})).toThrow(
      `--model-api-key-file names ${key}, which is readable by others; run: chmod 600 ${key}`,
    );
    chmodSync(key, 0o600);
    const c = resolveServeConfig({ "model-api-key-file": key }, { OPENAI_API_KEY: "sk-env" });
    expect(c.modelApiKey).toBe("sk-secret");
    expect(resolveServeConfig({}, { OPENAI_API_KEY: "sk-env" }).modelApiKey).toBe("sk-env");
    expect(resolveServeConfig({}, { A2A_NODE_MODEL_API_KEY: "sk-ours", OPENAI_API_KEY: "sk-env" }).modelApiKey).toBe(
      "sk-ours",
    );
    const fromFile = loadConfigFile(file("secret-ok.toml", `hermes_api_key_file = "${key}"\n`), true);
    expect(resolveServeConfig({}, {}, fromFile).hermesApiKey).toBe("sk-secret");
    expect(JSON.stringify(redacted(c))).not.toContain("sk-secret");
    expect(redacted(c)).toMatchObject({ modelApiKey: "(set)", hermesApiKey: "(not set)" });
  });
});

describe("one declaration per setting", () => {
  it("file keys, flags and environment variables are unique", () => {
    const files = NAMES.map((n) => setting(n).file);
    const flags = NAMES.map((n) => setting(n).flag).filter((f) => f !== false);
    const envs = NAMES.flatMap((n) => setting(n).env);
    expect(new Set(files).size).toBe(files.length);
    expect(new Set(flags).size).toBe(flags.length);
    expect(new Set(envs).size).toBe(envs.length);
    for (const n of NAMES) if (setting(n).env.length) expect(setting(n).env[0]).toMatch(/^A2A_NODE_[A-Z_]+$/);
  });

  it("serve --help lists every setting with its flag, variable, file key and default", () => {
    const help = settingsHelp();
    const flat = help.replace(/\n +/g, " ");
    for (const n of NAMES) {
      const s = setting(n);
      expect(flat).toContain(s.flag === false ? `(${s.file})` : `--${s.flag} ${s.value}`);
      expect(flat).toContain(`file ${s.file}`);
      for (const e of s.env) expect(flat).toContain(e);
      const shown = s.shown(s.default);
      if (shown !== undefined) expect(flat).toContain(`default ${shown}`);
    }
    for (const line of help.split("\n")) expect(line.length).toBeLessThanOrEqual(112);
  });

  it("the parser takes exactly the flags the settings declare", () => {
    const expected = NAMES.map((n) => setting(n).flag).filter((f): f is string => f !== false);
    expect(Object.keys(settingFlags()).sort()).toEqual(expected.sort());
  });

  it("the example config names every file key (set or commented out) and no other", () => {
    const text = readFileSync(EXAMPLE, "utf8");
    const topLevel = text.slice(0, text.indexOf("[[")).split("\n");
    const keys = new Set(
      topLevel.map((l) => /^#?\s?([a-z_]+) = /.exec(l)?.[1]).filter((k): k is string => k !== undefined),
    );
    const tables = ["skills", "authorize", "extended_card", "extensions"];
    const files = NAMES.map((n) => setting(n).file).filter((f) => !tables.includes(f));
    expect([...keys].sort()).toEqual(files.sort());
    expect(text).toContain("[[skills]]");
    expect(text).toContain("# [[authorize]]");
    expect(text).toContain("# [extended_card]");
    expect(text).toContain("# [[extended_card.skills]]");
    expect(text).toContain("# [[extensions]]");
  });
});
