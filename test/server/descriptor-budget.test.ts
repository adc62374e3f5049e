import { describe, expect, it } from "vitest";
import {
  descriptorCheck,
  descriptorLimit,
  fitToDescriptors,
  RESERVED_DESCRIPTORS,
} from "../../src/server/descriptor-budget";

const remote = { maxConnections: 1024, maxConnectionsPerAddress: 64, maxHandshakes: 256 };
const local = (n: number) => ({ maxConnections: n, maxConnectionsPerAddress: Number.MAX_SAFE_INTEGER });

describe("fitting every listener's caps under the file descriptor limit", () => {
  it("leaves them alone when the limit holds them all, with the reserve", () => {
    const caps = { mtls: remote, plain: local(1024), admin: local(64) };
    const r = fitToDescriptors(caps, 20_000);
    expect(r).toEqual({ caps, needed: 2112, available: 20_000 - RESERVED_DESCRIPTORS, lowered: false });
    expect(fitToDescriptors(caps, undefined)).toMatchObject({ caps, lowered: false, available: undefined });
  });

  it("lowers them in proportion when they could hold more than the limit leaves, so no listener can starve the others", () => {
    const r = fitToDescriptors({ mtls: remote, token: remote, plain: local(1024), admin: local(64) }, 1024);
    expect(r.lowered).toBe(true);
    expect(r.needed).toBe(3136);
    const total = Object.values(r.caps).reduce((a, c) => a + c.maxConnections, 0);
    expect(total).toBeLessThanOrEqual(1024 - RESERVED_DESCRIPTORS);
    expect(r.caps.mtls).toEqual({ maxConnections: 250, maxConnectionsPerAddress: 64, maxHandshakes: 62 });
    expect(r.caps.plain.maxConnections).toBe(250);
    // a loopback listener's stays out of the way
    expect(r.caps.plain.maxConnectionsPerAddress).toBe(Number.MAX_SAFE_INTEGER);
    expect(r.caps.admin.maxConnections).toBe(15);
  });

  it("refuses to start when the limit leaves next to nothing, saying what to raise", () => {
    expect(() => fitToDescriptors({ mtls: remote, plain: local(1024) }, 260)).toThrow(
      /^the file descriptor limit \(RLIMIT_NOFILE 260\) is too low to serve: 256 are kept .* raise it \(systemd: LimitNOFILE=65536; a shell: ulimit -n 65536\)$/,
    );
  });

  it("reads this process's limit from /proc", () => {
    expect(descriptorLimit()).toBeGreaterThan(0);
  });
});

describe("the readiness check on descriptors", () => {
  const at = new Date("2026-12-02T10:00:00.000Z");
  it("fails while none is free, naming the limit and what to do", () => {
    const c = descriptorCheck({ exhausted: true, exhaustions: 1, lastExhaustedAt: at }, 512, undefined, at.getTime());
    expect(c).toMatchObject({ ok: false, limit: 512, exhaustions: 1, lastExhaustedAt: at.toISOString() });
    expect(c.detail).toBe(
      "out of file descriptors (limit 512): no listener can accept a connection; raise the limit (systemd: LimitNOFILE; a shell: ulimit -n) or lower max_connections",
    );
  });

  it("passes otherwise, saying how many are open and, for ten minutes, when they last ran out", () => {
    expect(descriptorCheck({ exhausted: false, exhaustions: 0 }, 512, 40).detail).toBe(
      "40 of 512 file descriptors open",
    );
    const recent = descriptorCheck(
      { exhausted: false, exhaustions: 2, lastExhaustedAt: at },
      512,
      40,
      at.getTime() + 60_000,
    );
    expect(recent).toMatchObject({
      ok: true,
      detail: `40 of 512 file descriptors open; ran out at ${at.toISOString()}`,
      exhaustions: 2,
    });
    expect(
      descriptorCheck({ exhausted: false, exhaustions: 2, lastExhaustedAt: at }, 512, 40, at.getTime() + 11 * 60_000)
        .detail,
    ).toBe("40 of 512 file descriptors open");
  });
});
