/**
 * vitest globalSetup: one Postgres server for the run (see postgres-server.ts), stopped when the run ends.
 * Test files reach it through freshDatabase() (postgres.ts). A run of the unit project alone
 * (`npm run test:unit`) needs none, and starts none.
 */
import type { TestProject } from "vitest/node";
import { startPostgres } from "./postgres-server";

declare module "vitest" {
  export interface ProvidedContext {
    /** The run's Postgres server: its superuser URL. */
    postgresAdminUrl: string;
  }
}

export default async function setup(project: TestProject): Promise<(() => Promise<void>) | undefined> {
  if (project.vitest.projects.every((p) => p.name === "unit")) return undefined;
  const server = await startPostgres();
  project.provide("postgresAdminUrl", server.adminUrl);
  return () => server.stop();
}
