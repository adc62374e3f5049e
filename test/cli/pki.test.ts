import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { initPkiCommand } from "../../src/cli/commands/init-pki";
import { pkiCommand } from "../../src/cli/commands/pki";
import { CliError, UsageError } from "../../src/cli/errors";
import { bufferIo } from "../../src/cli/io";
import { homePaths } from "../../src/home";
import { inspectCert, readBundle } from "../../pki";

const made: string[] = [];
afterAll(() => made.forEach((d) => rmSync(d, { recursive: true, force: true })));
function tmp(): string {
  const d = mkdtempSync(join(tmpdir(), "a2a-cli-pki-"));
  made.push(d);
  return d;
}

async function pki(argv: string[], home: string) {
  const io = bufferIo();
  const code = await pkiCommand.run(argv, { io, home });
  return { code, out: io.out(), err: io.err() };
}

async function failure(p: Promise<unknown>): Promise<CliError> {
  const err = await p.then(
    () => undefined,
    (e) => e,
  );
  expect(err).toBeInstanceOf(CliError);
  return err as CliError;
}

let caHome: string; // ran init-pki --name alice: holds the CA key
let bundleHome: string; // installed from a bundle: no CA key
beforeAll(async () => {
  caHome = join(tmp(), "alice");
  bundleHome = join(tmp(), "bob");
  await initPkiCommand.run(["--name", "alice"], { io: bufferIo(), home: caHome });
  const bundle = join(tmp(), "bob.bundle");
  await pki(["issue", "bob", "--out", bundle], caHome);
  await initPkiCommand.run(["--bundle", bundle], { io: bufferIo(), home: bundleHome });
});

describe("a2a-node pki", () => {
  it("has help listing the subcommands, with examples and exit codes", () => {
    expect(pkiCommand.name).toBe("pki");
    for (const section of ["USAGE", "SUBCOMMANDS", "EXAMPLES", "EXIT CODES"]) expect(pkiCommand.help).toMatch(new RegExp(`^${section}$`, "m"));
    expect(pkiCommand.help).toMatch(/^ {2}issue {3}/m);
    expect(pkiCommand.help).toMatch(/^ {2}show {4}/m);
  });

  it.each([
    [[], /missing subcommand: issue or show/],
    [["frobnicate"], /unknown subcommand 'frobnicate'/],
    [["issue", "--out", "x"], /needs the machine's NAME/],
    [["issue", "bob"], /needs --out FILE/],
    [["issue", "bob", "carol", "--out", "x"], /unexpected argument 'carol'/],
    [["issue", "bob", "--out", "x", "--days", "-1"], /--days must be a whole number/],
    [["show", "extra"], /unexpected argument 'extra'/],
    [["show", "--out", "x"], /unknown flag '--out'/],
  ])("rejects %j as a usage error (exit 2)", async (argv, message) => {
    const err = await failure(pki(argv as string[], caHome));
    expect(err).toBeInstanceOf(UsageError);
    expect(err.exitCode).toBe(2);
    expect(err.message).toMatch(message);
  });
});

describe("a2a-node pki issue", () => {
  it("writes a 0600 bundle and prints what to do with it", async () => {
    const out = join(tmp(), "carol.bundle");
    const r = await pki(["issue", "carol", "--san", "carol.lan", "--san", "10.0.0.7", "--out", out], caHome);
    expect(r.code).toBe(0);
    expect(statSync(out).mode & 0o777).toBe(0o600);
    const bundle = await readBundle(out);
    expect(inspectCert(bundle.cert).sans).toEqual(["carol", "localhost", "127.0.0.1", "carol.lan", "10.0.0.7"]);
    expect(r.out).toContain(`issued "carol" into ${out}`);
    expect(r.out).toContain(`fingerprint  ${inspectCert(bundle.cert).fingerprint256}`);
    expect(r.out).toContain("next: copy it to carol over a private channel, run 'a2a-node init-pki --bundle FILE' there");
    expect(r.out).not.toContain("PRIVATE KEY");
  });

  it("prints one line of JSON with --json", async () => {
    const out = join(tmp(), "dave.bundle");
    const r = await pki(["issue", "dave", "--out", out, "--days", "10", "--json"], caHome);
    expect(r.out.trim().split("\n")).toHaveLength(1);
    const j = JSON.parse(r.out);
    expect(j).toMatchObject({ name: "dave", out, sans: ["dave", "localhost", "127.0.0.1"] });
    expect(j.fingerprint256).toBe(inspectCert((await readBundle(out)).cert).fingerprint256);
    expect((Date.parse(j.notAfter) - Date.now()) / 86_400_000).toBeCloseTo(10, 1);
  });

  it("refuses an existing --out file unless --force", async () => {
    const out = join(tmp(), "erin.bundle");
    writeFileSync(out, "precious");
    const err = await failure(pki(["issue", "erin", "--out", out], caHome));
    expect(err.exitCode).toBe(1);
    expect(err.message).toBe(`refusing to overwrite ${out}: it already exists`);
    expect(err.hint).toContain("--force");
    expect(readFileSync(out, "utf8")).toBe("precious");
    expect((await pki(["issue", "erin", "--out", out, "--force"], caHome)).code).toBe(0);
    expect((await readBundle(out)).name).toBe("erin");
  });

  it("on a home without the CA key, says where to run it", async () => {
    const out = join(tmp(), "frank.bundle");
    const err = await failure(pki(["issue", "frank", "--out", out], bundleHome));
    expect(err.exitCode).toBe(1);
    expect(err.message).toBe(`no fleet CA key at ${homePaths(bundleHome).caKey}`);
    expect(err.hint).toBe("run this on the machine that ran 'a2a-node init-pki' first (it holds secrets/ca.key)");
    expect(existsSync(out)).toBe(false);
  });

  it.each(["local", "LOCAL", "localhost"])("refuses the reserved name %j with exit 1, saying what it means, and writes nothing", async (name) => {
    const out = join(tmp(), "reserved.bundle");
    const err = await failure(pki(["issue", name, "--out", out], caHome));
    expect(err).not.toBeInstanceOf(UsageError);
    expect(err.exitCode).toBe(1);
    expect(err.message).toMatch(new RegExp(`^the name "${name.toLowerCase()}" is reserved: `));
    expect(err.hint).toBe("choose another name for this node, such as the machine's host name");
    expect(existsSync(out)).toBe(false);
  });

  it("turns a bad SAN into exit 1 with a hint", async () => {
    const err = await failure(pki(["issue", "gina", "--san", "no spaces", "--out", join(tmp(), "g")], caHome));
    expect(err.exitCode).toBe(1);
    expect(err.message).toMatch(/^invalid --san "no spaces"/);
    expect(err.hint).toMatch(/DNS name/);
  });
});

describe("a2a-node pki show", () => {
  it("prints this node's identity, and that the CA home can issue", async () => {
    const { code, out } = await pki(["show"], caHome);
    const paths = homePaths(caHome);
    expect(code).toBe(0);
    expect(out).toMatch(/^node +alice$/m);
    expect(out).toContain(inspectCert(readFileSync(paths.nodeCert, "utf8")).fingerprint256);
    expect(out).toContain(inspectCert(readFileSync(paths.caCert, "utf8")).fingerprint256);
    expect(out).toMatch(/^CA key +.*ca\.key \(this home can issue/m);
  });

  it("--json gives the identity for scripts, with whether the home holds the CA key", async () => {
    const a = JSON.parse((await pki(["show", "--json"], caHome)).out);
    const b = JSON.parse((await pki(["show", "--json"], bundleHome)).out);
    expect(a).toMatchObject({ name: "alice", expired: false, ca: { hasKey: true } });
    expect(b).toMatchObject({ name: "bob", expired: false, ca: { hasKey: false, fingerprint256: a.ca.fingerprint256 } });
    expect(b.fingerprint256).toBe(inspectCert(readFileSync(homePaths(bundleHome).nodeCert, "utf8")).fingerprint256);
    expect(b.sans).toEqual(["bob", "localhost", "127.0.0.1"]);
    expect(new Date(b.notAfter).getTime()).toBeGreaterThan(Date.now());
    expect(JSON.stringify(b)).not.toContain("PRIVATE KEY");
  });

  it("on an empty home, says how to get an identity", async () => {
    const err = await failure(pki(["show"], join(tmp(), "empty")));
    expect(err.exitCode).toBe(1);
    expect(err.hint).toBe("run 'a2a-node init-pki --name NAME' (or --bundle FILE)");
  });

  it("refuses to show a home whose key others can read, with the chmod fix", async () => {
    const home = join(tmp(), "loose");
    await initPkiCommand.run(["--name", "loose"], { io: bufferIo(), home });
    chmodSync(homePaths(home).nodeKey, 0o640);
    const err = await failure(pki(["show"], home));
    expect(err.hint).toBe(`chmod 600 ${homePaths(home).nodeKey}`);
  });
});
