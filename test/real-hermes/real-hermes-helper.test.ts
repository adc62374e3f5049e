/**
 * The real-Hermes helper fails loudly, naming the variable to set, when the server is not where it looks: the
 * real-Hermes tests never pass by skipping.
 */
import { rmSync } from "node:fs";
import { afterEach, describe, expect, it } from "vitest";
import { realHermesDir, requireRealHermes, startRealHermes } from "../helpers/real-hermes";
import { tempDir } from "../helpers/temp-dir";

const saved = process.env.A2A_REAL_HERMES;
afterEach(() => {
  if (saved === undefined) delete process.env.A2A_REAL_HERMES;
  else process.env.A2A_REAL_HERMES = saved;
});

describe("finding the real Hermes server", () => {
  it("defaults to /work/shared/real-hermes, and A2A_REAL_HERMES moves it", () => {
    delete process.env.A2A_REAL_HERMES;
    expect(realHermesDir()).toBe("/work/shared/real-hermes");
    process.env.A2A_REAL_HERMES = "/elsewhere";
    expect(realHermesDir()).toBe("/elsewhere");
  });

  it("a directory without the runner and its archive is refused with what to set, before anything starts", async () => {
    const empty = tempDir("a2a-no-hermes-");
    try {
      process.env.A2A_REAL_HERMES = empty;
      const why = `the real Hermes server is not at ${empty} (no real-hermes runner or hermes-src.tgz there): set A2A_REAL_HERMES to the directory that holds them`;
      expect(() => requireRealHermes()).toThrow(why);
      await expect(startRealHermes()).rejects.toThrow(why);
    } finally {
      rmSync(empty, { recursive: true, force: true });
    }
  });
});
