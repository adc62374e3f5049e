import { describe, expect, it } from "vitest";
import { existsSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { X509Certificate } from "node:crypto";
import { RevocationState } from "../../src/fleet/revocation-state";
import { startCrlSync } from "../../src/fleet/crl-sync";
import { createCa, makeCrl } from "../../pki";
import type { Logger } from "../../src/log";
import type { PeerRegistry } from "../../src/peers/peer-registry";
import { makeFleet, tempDirs } from "../pki/helpers";

const tmp = tempDirs();

function recorder(): Logger & { lines: string[] } {
  const lines: string[] = [];
  const put = (level: string) => (m: string, f?: Record<string, unknown>) =>
    void lines.push(`${level} ${m} ${JSON.stringify(f ?? {})}`);
  return { lines, info: put("info"), warn: put("warn"), error: put("error") };
}

const serialOf = (pem: string) => new X509Certificate(pem).serialNumber.replace(/^0+/, "");

describe("RevocationState", () => {
  it("takes newer lists only, keeps them on disk, and keeps the last one when the file goes away", async () => {
    const { ca, alice, bob } = await makeFleet();
    const path = join(tmp(), "crl.pem");
    const log = recorder();
    const state = new RevocationState(
      path,
      () => ({ caPem: ca.certPem, name: "bob", serialNumber: serialOf(bob.certPem) }),
      log,
    );
    const changes: number[] = [];
    state.onChange((l) => changes.push(l.number));
    state.loadFromDisk();
    expect(state.current()).toBeUndefined();

    const a = serialOf(alice.certPem);
    const two = await makeCrl(ca, [{ serial: a, revokedAt: new Date("2030-01-01T00:00:00Z") }], 2);
    expect(state.offer(two, "peer 'alpha'")).toBe(true);
    expect(state.revokedAt(a)).toEqual(new Date("2030-01-01T00:00:00Z"));
    expect(readFileSync(path, "utf8")).toBe(two);
    expect(state.offer(two, "peer 'alpha'")).toBe(false);
    expect(state.offer(await makeCrl(ca, [], 1), "peer 'alpha'")).toBe(false);
    expect(state.revokedAt(a)).toBeDefined();

    // An older list written to disk by hand is ignored, with a warning.
    writeFileSync(path, await makeCrl(ca, [], 1));
    state.loadFromDisk();
    expect(state.revokedAt(a)).toBeDefined();
    expect(log.lines.some((l) => l.startsWith("warn ignoring an older revocation list"))).toBe(true);

    rmSync(path);
    state.loadFromDisk();
    expect(state.revokedAt(a)).toBeDefined();
    expect(changes).toEqual([2]);
  });

  it("refuses a list another CA signed, and says so when it is the file on disk", async () => {
    const { ca } = await makeFleet();
    const other = await createCa({ name: "other" });
    const path = join(tmp(), "crl.pem");
    const log = recorder();
    const state = new RevocationState(path, () => ({ caPem: ca.certPem, name: "x", serialNumber: "1" }), log);
    const foreign = await makeCrl(other, [], 9);
    expect(() => state.offer(foreign, "peer 'mallory'")).toThrow(
      /the revocation list from peer 'mallory' is not a revocation list of this fleet/,
    );
    expect(existsSync(path)).toBe(false);
    writeFileSync(path, foreign);
    state.loadFromDisk();
    expect(state.current()).toBeUndefined();
    expect(log.lines).toEqual([
      expect.stringMatching(
        /^error ignoring the revocation list on disk; the one in force stays .*its issuer is not the fleet CA/,
      ),
    ]);
  });

  it("logs an error when this node's own certificate is on the list", async () => {
    const { ca, bob } = await makeFleet();
    const log = recorder();
    const state = new RevocationState(
      join(tmp(), "crl.pem"),
      () => ({ caPem: ca.certPem, name: "bob", serialNumber: serialOf(bob.certPem) }),
      log,
    );
    state.offer(await makeCrl(ca, [{ serial: serialOf(bob.certPem), revokedAt: new Date() }], 1), "test");
    expect(log.lines.some((l) => l.startsWith("error this node's own certificate is revoked; peers refuse it"))).toBe(
      true,
    );
  });
});

describe("startCrlSync", () => {
  it("warns at every round that fails (ca_peer not a registered peer), saying what list is in force, and keeps trying", async () => {
    const { ca } = await makeFleet();
    const log = recorder();
    const state = new RevocationState(
      join(tmp(), "crl.pem"),
      () => ({ caPem: ca.certPem, name: "x", serialNumber: "1" }),
      log,
    );
    const peers = { get: () => undefined } as unknown as PeerRegistry;
    const sync = startCrlSync({
      state,
      peers,
      settings: () => ({ caPeer: "alpha", crlRefreshMs: 3_600_000 }),
      fetchFor: () => fetch,
      log,
    });
    await sync.refreshNow();
    await sync.refreshNow();
    // A list in force that is past its next update says so in the warning.
    const signed = new Date(Date.now() - 2 * 3_600_000);
    state.offer(await makeCrl(ca, [], 5, signed, 3_600_000), "a file");
    await sync.refreshNow();
    sync.stop();
    const warned = log.lines.filter((l) => l.startsWith("warn"));
    expect(warned).toHaveLength(4); // the round at start, and three asked for
    for (const w of warned)
      expect(w).toMatch(
        /^warn could not fetch the revocation list; the one in force stays .*ca_peer 'alpha' is not a registered peer \(a2a-node peers add alpha URL\)/,
      );
    expect(warned[0]).toContain('"list":"none"');
    expect(JSON.parse(warned[3].slice(warned[3].indexOf("{")))).toMatchObject({
      list: 5,
      stale: true,
      list_age_s: expect.any(Number),
      next_update: new Date(Math.floor(signed.getTime() / 1000) * 1000 + 3_600_000).toISOString(),
    });
    expect(state.confirmedAt()).toBeUndefined();
  });
});
