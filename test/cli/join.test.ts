/** `join`'s mistakes in the command line are usage errors (exit 2), found before anything is made or sent. */
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { bufferIo } from "../../src/cli/io";
import { runCli } from "../../src/cli/registry";

const dir = mkdtempSync(join(tmpdir(), "a2a-join-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const FP = `sha256:${"ab".repeat(32)}`;

describe("join", () => {
  it.each([
    [["http://alpha.lan:9444"], "the enrollment URL must be https://HOST:PORT (got 'http://alpha.lan:9444')"],
    [["alpha.lan 9444"], "is not a URL"],
    [[], "join needs the CA node's enrollment URL"],
  ])("%j is a usage error: %s", async (args, message) => {
    const home = join(dir, "home");
    const io = bufferIo();
    expect(await runCli(["--home", home, "join", ...args, "--token", "beta.x", "--ca-fingerprint", FP], io)).toBe(2);
    expect(io.err()).toContain(message);
    expect(io.err()).toContain("see 'a2a-node join --help'");
    expect(existsSync(home)).toBe(false);
  });
});
