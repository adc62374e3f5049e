/**
 * The Hermes executor's scenarios (hermes-scenarios.ts) against the fake twin, as both server generations,
 * playing the real server's scripted model: the same list runs against the real server (0.18.2) in
 * test/real-hermes/hermes-real.test.ts, so what passes here is what the real one does; the newer generation,
 * which cannot run here, is the twin's alone.
 */
import { hermesScenarios } from "./hermes-scenarios";
import { startFakeHermes } from "../fakes/hermes/server";
import { markerScript } from "../fakes/hermes/markers";

for (const generation of ["older", "newer"] as const) {
  hermesScenarios(
    `the fake Hermes (${generation} generation)`,
    async () => {
      const apiKey = `hermes-${crypto.randomUUID()}`;
      const scratch = "/srv/hermes/scratch";
      const fake = startFakeHermes({
        generation,
        apiKey,
        maxConcurrentRuns: 2,
        script: (req) => markerScript(req, { scratch }),
      });
      return {
        url: fake.url,
        apiKey,
        scratch,
        realTools: false,
        generation,
        capacity: 2,
        shutdown: () => fake.shutdown(),
        up: () => fake.up(),
        close: () => fake.stop(),
      };
    },
    30_000,
  );
}
