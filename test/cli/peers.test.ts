import { beforeAll, describe, expect, it } from "vitest";
import { join } from "node:path";
import { runCli } from "../../src/cli/registry";
import { bufferIo } from "../../src/cli/io";
import { tempDir } from "../helpers/temp-dir";

let root: string;
let home: string;
const FP = Array.from({ length: 32 }, (_, i) => i.toString(16).padStart(2, "0").toUpperCase()).join(":");

async function cli(...args: string[]) {
  const io = bufferIo();
  const code = await runCli(["--home", home, ...args], io);
  return { code, out: io.out(), err: io.err() };
}

beforeAll(async () => {
  root = tempDir("a2a-peers-");
  home = join(root, "home");
  expect((await cli("init-pki", "--name", "alpha")).code).toBe(0);
});

describe("peers", () => {
  it("starts empty, with a hint", async () => {
    const r = await cli("peers", "list");
    expect(r.code).toBe(0);
    expect(r.out).toContain("no peers yet");
    expect(JSON.parse((await cli("peers", "list", "--json")).out)).toEqual([]);
  });

  it("adds, lists (text and JSON), refuses duplicates unless --replace, and removes", async () => {
    expect(await cli("peers", "add", "beta", "https://10.0.0.7:9443")).toMatchObject({
      code: 0,
      out: "added peer beta at https://10.0.0.7:9443\n",
    });
    const dup = await cli("peers", "add", "beta", "https://10.0.0.8:9443");
    expect(dup.code).toBe(1);
    expect(dup.err).toContain("peer 'beta' already exists");
    expect(dup.err).toContain("next: pass --replace");
    expect(
      (await cli("peers", "add", "beta", "https://10.0.0.8:9443", "--replace", "--fingerprint", FP.toLowerCase())).code,
    ).toBe(0);
    expect((await cli("peers", "add", "gamma", "https://gamma:9443")).code).toBe(0);
    const list = JSON.parse((await cli("peers", "list", "--json")).out);
    expect(
      list.map((p: { name: string; url: string; fingerprint?: string }) => [p.name, p.url, p.fingerprint]),
    ).toEqual([
      ["beta", "https://10.0.0.8:9443", FP],
      ["gamma", "https://gamma:9443", undefined],
    ]);
    const text = (await cli("peers", "list")).out;
    expect(text).toMatch(/^NAME\s+URL\s+REACHED\n/);
    expect(text).toContain(
      `beta   https://10.0.0.8:9443  fleet, certificate pinned ${FP} (older pin: converted to a key pin on next contact)`,
    );
    const pin = `spki:sha256:${"Ab_-".repeat(10)}xyz`;
    const keyed = await cli("peers", "add", "delta", "https://delta:9443", "--key-pin", pin);
    expect(keyed).toMatchObject({ code: 0, out: `added peer delta at https://delta:9443 (key pinned ${pin})\n` });
    expect(
      JSON.parse((await cli("peers", "list", "--json")).out).find((p: { name: string }) => p.name === "delta"),
    ).toEqual({ name: "delta", url: "https://delta:9443", keyPin: pin, addedAt: expect.any(String) });
    expect((await cli("peers", "list")).out).toMatch(
      new RegExp(`delta\\s+https://delta:9443\\s+fleet, key pinned ${pin.replace(/[-_]/g, "\\$&")}\\n`),
    );
    expect((await cli("peers", "show", "delta")).out).toContain(`pinned       key pinned ${pin}\n`);
    expect((await cli("peers", "remove", "delta")).code).toBe(0);
    expect(await cli("peers", "remove", "gamma")).toMatchObject({ code: 0, out: "removed peer gamma\n" });
    const gone = await cli("peers", "remove", "gamma");
    expect(gone.code).toBe(3);
    expect(gone.err).toContain("no peer named 'gamma'");
  });

  it.each([
    [["peers"], "peers needs a subcommand"],
    [["peers", "frob"], "unknown peers subcommand 'frob'"],
    [["peers", "add", "beta"], "peers add needs NAME and URL"],
    [
      ["peers", "add", "bad name!", "https://x:1"],
      "'bad name!' is not a valid peer name: only letters, digits and dashes",
    ],
    [["peers", "add", "beta-", "https://x:1"], "'beta-' is not a valid peer name"],
    [["peers", "add", "b".repeat(64), "https://x:1"], "must be 1 to 63 characters"],
    [["peers", "add", "local", "https://x:1"], "is reserved"],
    [["peers", "add", "Localhost", "https://x:1"], "is reserved"],
    [["peers", "add", "beta", "not a url"], "is not a URL"],
    [
      ["peers", "add", "beta", "http://x:9443"],
      "'http://x:9443' is plain HTTP; peers speak mutual TLS only: use https://x:9443",
    ],
    [["peers", "add", "beta", "https://u:p@x:9443"], "carries a user name or password"],
    [["peers", "add", "beta", "https://x:9443", "--fingerprint", "abc"], "--fingerprint must be a SHA-256"],
    [
      ["peers", "add", "beta", "https://x:9443", "--pin", "--fingerprint", FP],
      "--pin, --key-pin and --fingerprint do not go together",
    ],
    [
      ["peers", "add", "beta", "https://x:9443", "--pin", "--key-pin", `spki:sha256:${"A".repeat(43)}`],
      "--pin, --key-pin and --fingerprint do not go together",
    ],
    [["peers", "add", "beta", "https://x:9443", "--key-pin", FP], "--key-pin must be a key pin like spki:sha256:"],
    [["peers", "remove"], "exactly one NAME"],
    [["peers", "list", "extra"], "takes no arguments"],
    [["peers", "discover"], "peers discover needs exactly one URL"],
    [["peers", "discover", "http://x:9443"], "is plain HTTP"],
    [["peers", "ping"], "peers ping needs exactly one NAME"],
  ])("%j is a usage error: %s", async (args, message) => {
    const r = await cli(...(args as string[]));
    expect(r.code).toBe(2);
    expect(r.err).toContain(message);
    // A subcommand's mistakes point at its own help; a missing or unknown subcommand at the group's.
    const sub = (args as string[])[1];
    expect(r.err).toContain(
      sub === undefined || sub === "frob" ? "see 'a2a-node peers --help'" : `see 'a2a-node peers ${sub} --help'`,
    );
  });

  it("lower-cases a name as init-pki issues it, and says so", async () => {
    const r = await cli("peers", "add", "Delta", "https://10.0.0.9:9443");
    expect(r).toMatchObject({ code: 0, out: "added peer delta at https://10.0.0.9:9443\n" });
    expect(r.err).toBe("note: peer names are lower case, as init-pki issues them: 'Delta' is added as 'delta'\n");
    expect(await cli("peers", "remove", "DELTA", "--json")).toMatchObject({ code: 0, out: `{"removed":"delta"}\n` });
  });

  it("fills in the node's port 9443 (not 443) and https://, and says so; an explicit :443 stays", async () => {
    const noPort = await cli("peers", "add", "epsilon", "https://10.0.0.10", "--json");
    expect(noPort.code).toBe(0);
    expect(JSON.parse(noPort.out)).toMatchObject({ name: "epsilon", url: "https://10.0.0.10:9443" });
    expect(noPort.err).toBe("note: no port given: using the node default 9443 (https://10.0.0.10:9443)\n");
    const bare = await cli("peers", "add", "zeta", "zeta.lan");
    expect(bare.out).toBe("added peer zeta at https://zeta.lan:9443\n");
    expect(bare.err).toContain("no scheme given: using https://");
    const explicit = await cli("peers", "add", "eta", "https://eta.lan:443");
    expect(explicit).toMatchObject({ code: 0, out: "added peer eta at https://eta.lan:443\n", err: "" });
    for (const n of ["epsilon", "zeta", "eta"]) expect((await cli("peers", "remove", n)).code).toBe(0);
  });

  it("says how to start when the home does not exist", async () => {
    const io = bufferIo();
    const code = await runCli(["--home", join(root, "nowhere"), "peers", "list"], io);
    expect(code).toBe(3);
    expect(io.err()).toContain("next: run 'a2a-node init-pki --name NAME' first");
  });
});
