import { describe, expect, it } from "vitest";
import { existsSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { initPkiCommand } from "../../src/cli/commands/init-pki";
import { pkiCommand } from "../../src/cli/commands/pki";
import { CliError, UsageError } from "../../src/cli/errors";
import { bufferIo } from "../../src/cli/io";
import { homePaths } from "../../src/home";
import { inspectCert } from "../../pki";
import { tempDir } from "../helpers/temp-dir";

const tmp = () => tempDir("a2a-cli-init-");

async function run(argv: string[], home: string) {
  const io = bufferIo();
  const code = await initPkiCommand.run(argv, { io, home });
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

describe("a2a-node init-pki", () => {
  it("has help with usage, examples and exit codes", () => {
    expect(initPkiCommand.name).toBe("init-pki");
    for (const section of ["USAGE", "FLAGS", "EXAMPLES", "EXIT CODES"])
      expect(initPkiCommand.help).toMatch(new RegExp(`^${section}$`, "m"));
    expect(initPkiCommand.help).toContain("a2a-node init-pki --bundle FILE");
    expect(initPkiCommand.summary.length).toBeGreaterThan(10);
  });

  it.each([
    [[], /give --name NAME/],
    [["--name", "a", "--bundle", "f"], /cannot be used together/],
    [["--bundle", "f", "--san", "x"], /--san cannot be used with --bundle/],
    [["--bundle", "f", "--days", "3"], /--days cannot be used with --bundle/],
    [["--name", "a", "extra"], /unexpected argument 'extra'/],
    [["--name", "a", "--days", "0"], /--days must be a whole number/],
    [["--name", "a", "--ca-days", "1.5"], /--ca-days must be a whole number/],
    [["--nmae", "a"], /unknown flag '--nmae'/],
    [["--bundle", "f", "--csr", "r"], /--csr and --bundle cannot be used together/],
    [["--name", "a", "--csr", "r", "--days", "3"], /--days cannot be used with --csr: the CA machine chooses it$/],
    [["--name", "a", "--force"], /--force applies only to --csr FILE/],
  ])("rejects %j as a usage error (exit 2)", async (argv, message) => {
    const home = join(tmp(), "home");
    const err = await failure(run(argv as string[], home));
    expect(err).toBeInstanceOf(UsageError);
    expect(err.exitCode).toBe(2);
    expect(err.message).toMatch(message);
    expect(existsSync(join(home, "secrets", "node.key"))).toBe(false);
  });

  it("creates the CA and identity and prints a summary with the next step", async () => {
    const home = join(tmp(), "home");
    const { code, out, err } = await run(["--name", "alice", "--san", "10.0.0.5"], home);
    const paths = homePaths(home);
    expect(code).toBe(0);
    expect(err).toBe("");
    const fp = inspectCert(readFileSync(paths.nodeCert, "utf8")).fingerprint256;
    expect(out).toMatch(/^created fleet CA "a2a-node fleet CA [0-9a-f]{8} \(alice\)"\n/);
    expect(out).toContain('node "alice"');
    expect(out).toMatch(/SANs +alice, localhost, 127\.0\.0\.1, .*10\.0\.0\.5/);
    expect(out).toContain(`fingerprint  ${fp}`);
    expect(out).toContain(paths.nodeKey);
    expect(out).toMatch(/expires +\d{4}-\d\d-\d\d \d\d:\d\d UTC \(in 365 days\)/);
    expect(out).toContain("next: make identities for other machines with 'a2a-node pki issue NAME --out NAME.bundle'");
    expect(statSync(paths.secretsDir).mode & 0o777).toBe(0o700);
    expect(statSync(paths.nodeKey).mode & 0o777).toBe(0o600);
  });

  it("prints one line of JSON with --json", async () => {
    const home = join(tmp(), "home");
    const { out } = await run(["--name", "alice", "--san", "alice.lan", "--days", "30", "--json"], home);
    expect(out.endsWith("\n")).toBe(true);
    expect(out.trim().split("\n")).toHaveLength(1);
    const j = JSON.parse(out);
    const paths = homePaths(home);
    expect(j.ca).toMatchObject({ created: true, certPath: paths.caCert, keyPath: paths.caKey });
    expect(j.node).toMatchObject({ name: "alice", certPath: paths.nodeCert, keyPath: paths.nodeKey });
    expect(j.node.sans).toContain("alice.lan");
    expect(j.node.fingerprint256).toBe(inspectCert(readFileSync(paths.nodeCert, "utf8")).fingerprint256);
    expect((Date.parse(j.node.notAfter) - Date.now()) / 86_400_000).toBeCloseTo(30, 1);
  });

  it("refuses a second run with exit 1, the reason and the next step; the key is unchanged", async () => {
    const home = join(tmp(), "home");
    await run(["--name", "alice"], home);
    const key = readFileSync(homePaths(home).nodeKey, "utf8");
    const err = await failure(run(["--name", "alice"], home));
    expect(err).not.toBeInstanceOf(UsageError);
    expect(err.exitCode).toBe(1);
    // Says whose identity is there and when it was made (npm start makes one unasked), not just "exists".
    const today = new Date().toISOString().slice(0, 10);
    const caCn = inspectCert(readFileSync(homePaths(home).caCert, "utf8")).subjectCn;
    expect(err.message).toBe(
      `${home} already holds the identity of node "alice" (fleet CA "${caCn}", made ${today}); a home is one node, and its key is never replaced`,
    );
    expect(err.hint).toMatch(/a2a-node pki show; 'npm start' makes one named after the host/);
    expect(err.hint).toMatch(/a2a-node --home DIR init-pki/);
    // The same for a bundle: the home is already a node.
    const again = await failure(run(["--bundle", join(home, "nothing.bundle")], home));
    expect(again.message).toMatch(/already holds the identity of node "alice"/);
    expect(readFileSync(homePaths(home).nodeKey, "utf8")).toBe(key);
  });

  it("turns a bad name into exit 1 with a hint", async () => {
    const err = await failure(run(["--name", "no_underscores"], join(tmp(), "home")));
    expect(err.exitCode).toBe(1);
    expect(err.message).toMatch(/^invalid name "no_underscores"/);
    expect(err.hint).toBeTruthy();
  });

  it("refuses the reserved name 'local' (the plain-HTTP listener's callers), creating nothing", async () => {
    const home = join(tmp(), "home");
    const err = await failure(run(["--name", "local"], home));
    expect(err.exitCode).toBe(1);
    expect(err.message).toBe(
      `the name "local" is reserved: it stands for the callers of a node's plain-HTTP loopback listener (any process on that machine)`,
    );
    expect(err.hint).toMatch(/choose another name/);
    expect(existsSync(homePaths(home).nodeKey)).toBe(false);
    expect(existsSync(homePaths(home).caKey)).toBe(false);
  });

  it("installs a bundle made by 'pki issue' on another home", async () => {
    const a = join(tmp(), "a");
    const b = join(tmp(), "b");
    const bundle = join(tmp(), "bob.bundle");
    await run(["--name", "alice"], a);
    expect(await pkiCommand.run(["issue", "bob", "--out", bundle], { io: bufferIo(), home: a })).toBe(0);

    const { code, out } = await run(["--bundle", bundle, "--json"], b);
    expect(code).toBe(0);
    const j = JSON.parse(out);
    expect(j.ca).toMatchObject({ created: false, keyPath: null });
    expect(j.ca.fingerprint256).toBe(inspectCert(readFileSync(homePaths(a).caCert, "utf8")).fingerprint256);
    expect(j.node.name).toBe("bob");
    expect(inspectCert(readFileSync(homePaths(b).nodeCert, "utf8")).subjectCn).toBe("bob");
    expect(existsSync(homePaths(b).caKey)).toBe(false);

    const text = await run(["--bundle", bundle], join(tmp(), "c"));
    expect(text.out).toMatch(/^installed fleet CA "/);
    expect(text.out).toContain("not on this machine");
    expect(text.out).toContain(`next: delete ${bundle} (it holds this node's private key)`);
  });

  it("reports a bad bundle with exit 1 and what to do", async () => {
    const file = join(tmp(), "bad.bundle");
    writeFileSync(file, "{}");
    const err = await failure(run(["--bundle", file], join(tmp(), "home")));
    expect(err.exitCode).toBe(1);
    expect(err.message).toBe(`bad bundle ${file}: format is null, expected "a2a-node-bundle/1"`);
    expect(err.hint).toContain("pki issue");
  });
});

describe("a2a-node init-pki --csr, then pki sign and pki import", () => {
  it("makes the key here, the CA signs the request, import installs it; each step says the next", async () => {
    const caHome = join(tmp(), "alpha");
    await run(["--name", "alpha"], caHome);
    const home = join(tmp(), "carol");
    const csr = join(tmp(), "carol.csr");
    const req = await run(["--name", "carol", "--san", "10.0.0.8", "--csr", csr], home);
    expect(req.code).toBe(0);
    expect(req.out).toContain(`made this node's key ${homePaths(home).nodeKey} (it never leaves this machine)\n`);
    expect(req.out).toContain(`wrote a certificate request for "carol" to ${csr}\n`);
    expect(req.out).toMatch(/SANs asked for +carol, localhost, 127\.0\.0\.1, .*10\.0\.0\.8\n/);
    expect(req.out).toContain(
      `next: copy ${csr} to the CA machine and run 'a2a-node pki sign ${csr} --out carol.crt' there;`,
    );
    expect(statSync(homePaths(home).nodeKey).mode & 0o777).toBe(0o600);
    expect(readFileSync(csr, "utf8")).not.toContain("PRIVATE KEY");

    const pki = async (argv: string[], h: string) => {
      const io = bufferIo();
      const code = await pkiCommand.run(argv, { io, home: h });
      return { code, out: io.out() };
    };
    const review = await pki(["inspect", csr], caHome);
    expect(review.out).toContain("name          carol\n");
    expect(review.out).toMatch(/SANs asked +localhost, 127\.0\.0\.1, .*10\.0\.0\.8\n/);

    const cert = join(tmp(), "carol.crt");
    const signed = await pki(["sign", csr, "--out", cert, "--days", "30"], caHome);
    expect(signed.code).toBe(0);
    expect(signed.out).toContain(`signed "carol" into ${cert}\n`);
    expect(signed.out).toMatch(/expires +.* \(in 30 days\)\n/);
    expect(signed.out).toContain(
      `next: copy ${cert} and certs/ca.crt to carol, and there run 'a2a-node pki import CERT --ca ca.crt'`,
    );

    const imported = await pki(["import", cert, "--ca", homePaths(caHome).caCert, "--json"], home);
    const j = JSON.parse(imported.out);
    expect(j.node).toMatchObject({ name: "carol", certPath: homePaths(home).nodeCert });
    expect(j.ca).toMatchObject({
      keyPath: null,
      fingerprint256: inspectCert(readFileSync(homePaths(caHome).caCert, "utf8")).fingerprint256,
    });
    expect(j.node.fingerprint256).toBe(inspectCert(readFileSync(homePaths(home).nodeCert, "utf8")).fingerprint256);
  });

  it.each([
    [["sign", "--out", "x"], /pki sign needs the request file/],
    [["sign", "r.csr"], /pki sign needs --out CERT/],
    [["import", "c.crt"], /pki import needs --ca CA_CERT/],
    [["import", "--ca", "ca.crt"], /pki import needs the certificate file/],
  ])("pki %j is a usage error", async (argv, message) => {
    const err = await failure(pkiCommand.run(argv as string[], { io: bufferIo(), home: join(tmp(), "h") }));
    expect(err).toBeInstanceOf(UsageError);
    expect(err.message).toMatch(message);
  });
});
