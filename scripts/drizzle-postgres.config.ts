import { defineConfig } from "drizzle-kit";

// Dev-only, like drizzle.config.ts: the Postgres backend's migrations, from src/store/postgres/schema.ts.
export default defineConfig({
  dialect: "postgresql",
  schema: "./src/store/postgres/schema.ts",
  out: "./src/store/postgres/migrations",
});
