import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { writeFileSync } from "node:fs";
import { runCli } from "../../src/cli/registry";
import { bufferIo } from "../../src/cli/io";
import { makeFleet, type Fleet } from "../helpers/fleet";
import { get } from "../helpers/rpc";

let fleet: Fleet;
beforeAll(async () => {
  fleet = await makeFleet(["alpha"]);
});
afterAll(() => fleet.cleanup());

describe("serve", () => {
  it("--check lists the effective configuration, each value with its source, secrets redacted", async () => {
    const io = bufferIo({ OPENAI_API_KEY: "sk-very-secret", A2A_NODE_PORT: "9555" });
    expect(await runCli(["--home", fleet.homes.alpha, "serve", "--check", "--executor", "echo"], io)).toBe(0);
    expect(io.out()).toMatch(/^port = 9555 +# A2A_NODE_PORT$/m);
    expect(io.out()).toMatch(/^executor = "echo" +# flag$/m);
    expect(io.out()).toMatch(/^host = "0\.0\.0\.0" +# default$/m);
    expect(io.out()).toMatch(/^model_api_key_file = \(set\) +# OPENAI_API_KEY$/m);
    expect(io.out()).not.toContain("sk-very-secret");
  });

  it("--check --json prints the configuration as one JSON value on one line, with each value's source", async () => {
    const io = bufferIo({ OPENAI_API_KEY: "sk-very-secret", A2A_NODE_PORT: "9555" });
    expect(await runCli(["--home", fleet.homes.alpha, "serve", "--check", "--json", "--executor", "echo"], io)).toBe(0);
    // As every --json: one value on one line, so `| jq` and line-by-line readers take it alike.
    expect(io.out()).toMatch(/^\{[^\n]*\}\n$/);
    const c = JSON.parse(io.out());
    expect(c).toMatchObject({
      home: fleet.homes.alpha,
      port: 9555,
      executor: "echo",
      modelApiKey: "(set)",
      sources: { port: "A2A_NODE_PORT", executor: "flag" },
    });
    expect(io.out()).not.toContain("sk-very-secret");
  });

  it("--check shows [extended_card] and [[extensions]], and refuses an extended card that reuses a public skill id", async () => {
    const path = `${fleet.root}/card.toml`;
    writeFileSync(
      path,
      '[extended_card]\n[[extended_card.skills]]\nid = "ops"\nname = "Ops"\ndescription = "o"\n[[extensions]]\nuri = "urn:example:sign:v1"\nrequired = true\n[[extensions]]\nuri = "urn:example:cite:v1"\n',
    );
    let io = bufferIo();
    expect(
      await runCli(["--home", fleet.homes.alpha, "serve", "--check", "--config", path, "--executor", "echo"], io),
    ).toBe(0);
    expect(io.out()).toMatch(
      /^extended_card = \[extended_card\] with the public description and skills \["ops"\] +# file$/m,
    );
    expect(io.out()).toMatch(/^extensions = urn:example:sign:v1 \(required\), urn:example:cite:v1 +# file$/m);
    writeFileSync(path, '[[extended_card.skills]]\nid = "delegate"\nname = "D"\ndescription = "d"\n');
    io = bufferIo();
    expect(await runCli(["--home", fleet.homes.alpha, "serve", "--check", "--config", path], io)).toBe(2);
    expect(io.err()).toContain("extended_card: skill id 'delegate' is already a skill of the public card");
  });

  it("--check exits 2 naming the variable when the configuration is invalid", async () => {
    const io = bufferIo({ A2A_NODE_PORT: "99999" });
    expect(await runCli(["--home", fleet.homes.alpha, "serve", "--check"], io)).toBe(2);
    expect(io.err()).toContain("A2A_NODE_PORT must be a whole number 0-65535 (got 99999)");
  });

  it.each([
    [["--executor", "gpt4"], "--executor must be one of echo, openai, hermes, conformance"],
    [["--port", "x"], "--port must be a number (got 'x')"],
    [["extra"], "serve takes no arguments"],
    [["--config", "/nonexistent.toml"], "config file /nonexistent.toml does not exist"],
  ])("%j is a usage error", async (args, message) => {
    const io = bufferIo();
    expect(await runCli(["--home", fleet.homes.alpha, "serve", ...(args as string[])], io)).toBe(2);
    expect(io.err()).toContain(message);
  });

  it("serves until its stop signal, then stops cleanly with exit 0", async () => {
    const stop = new AbortController();
    let log = "";
    let listening!: (url: string) => void;
    const url = new Promise<string>((r) => (listening = r));
    let errors = "";
    const io = {
      // The log goes to stdout; not a terminal here, so JSON lines.
      stdout: {
        write: (t: string) => {
          log += t;
          const m = /"listen":"(https:\/\/[^"]+)"/.exec(log);
          if (m) listening(m[1]);
        },
      },
      stderr: { write: (t: string) => void (errors += t) },
      env: {},
      stopSignal: stop.signal,
    };
    const exit = runCli(
      ["--home", fleet.homes.alpha, "serve", "--host", "127.0.0.1", "--port", "0", "--executor", "echo"],
      io,
    );
    const health = await get(`${await url}/health`, fleet.identity("alpha"));
    expect(health.body).toMatchObject({ status: "ok", name: "alpha", caller: "alpha", executor: "echo" });
    stop.abort("SIGTERM");
    expect(await exit).toBe(0);
    const lines = log
      .trimEnd()
      .split("\n")
      .map((l) => JSON.parse(l));
    expect(lines.at(-1)).toMatchObject({ level: "info", msg: "stopped", name: "alpha" });
    expect(lines.every((l) => typeof l.time === "string" && ["info", "warn", "error"].includes(l.level))).toBe(true);
    expect(errors).toBe("");
  });

  it("says what to do when the home has no identity", async () => {
    const io = bufferIo();
    expect(await runCli(["--home", `${fleet.root}/empty`, "serve", "--port", "0"], io)).toBe(1);
    expect(io.err()).toContain("init-pki");
  });
});
