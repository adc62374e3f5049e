import { defineConfig } from "drizzle-kit";

// Dev-only: `npm run db:generate` (run from the repository root, which the paths below are relative to) writes
// SQL migrations from src/store/schema.ts, then embeds them in
// src/store/migrations.gen.ts so the compiled binary carries them.
export default defineConfig({
  dialect: "sqlite",
  schema: "./src/store/schema.ts",
  out: "./src/store/migrations",
});
