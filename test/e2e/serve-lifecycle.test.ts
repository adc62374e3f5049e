/**
 * The daemon's life on a home, with the compiled binary: one serve per home (a second refuses, naming the
 * first's PID), and a lock left by a killed daemon does not keep the home locked.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { makeFleet, type Fleet } from "../helpers/fleet";
import { runBinary, serveBinary, type ServedBinary } from "../helpers/binary";
import { get } from "../helpers/rpc";

let fleet: Fleet;
const running: ServedBinary[] = [];

beforeAll(async () => {
  fleet = await makeFleet(["alpha", "beta"]);
});
afterAll(async () => {
  for (const n of running.splice(0)) await n.stop("SIGKILL");
  fleet.cleanup();
});

describe("one serve per home", () => {
  it("a second serve on the same home refuses, naming the first's PID and what to do", async () => {
    const first = await serveBinary(fleet.homes.alpha, ["--executor", "echo"]);
    running.push(first);
    expect(readFileSync(join(fleet.homes.alpha, "serve.pid"), "utf8").trim()).toBe(String(first.pid));
    const second = await runBinary(["--home", fleet.homes.alpha, "serve", "--host", "127.0.0.1", "--port", "0", "--executor", "echo"]);
    expect(second.code).toBe(1);
    expect(second.stderr).toContain(`another a2a-node serve (PID ${first.pid}) is already running on this home`);
    expect(second.stderr).toContain(`kill ${first.pid}`);
    // The first is untouched and still answers.
    expect((await get(`${first.url}/health`, fleet.identity("alpha"))).status).toBe(200);
    expect(await first.stop()).toBe(0);
    running.splice(running.indexOf(first), 1);
    expect(existsSync(join(fleet.homes.alpha, "serve.pid"))).toBe(false);
  });

  it("a daemon killed with SIGKILL leaves a stale lock that the next start takes over", async () => {
    const killed = await serveBinary(fleet.homes.beta, ["--executor", "echo"]);
    await killed.stop("SIGKILL");
    expect(readFileSync(join(fleet.homes.beta, "serve.pid"), "utf8").trim()).toBe(String(killed.pid));
    const next = await serveBinary(fleet.homes.beta, ["--executor", "echo"]);
    running.push(next);
    expect(readFileSync(join(fleet.homes.beta, "serve.pid"), "utf8").trim()).toBe(String(next.pid));
  });

  it("a lock naming a live process that is not a2a-node serve (a reused PID) is taken over", async () => {
    const home = fleet.homes.alpha;
    writeFileSync(join(home, "serve.pid"), `${process.pid}\n`); // this test runner: alive, but not `serve`
    const node = await serveBinary(home, ["--executor", "echo"]);
    running.push(node);
    expect(readFileSync(join(home, "serve.pid"), "utf8").trim()).toBe(String(node.pid));
  });
});
