// drizzle-kit config for PostgreSQL: `cd packages/db && npx drizzle-kit generate --config
// drizzle.pg.config.ts` writes SQL migrations to the repository's drizzle-pg/ folder (committed).
// The tables are the ones the SQLite config reads, built with pg-core (src/schema/pg.ts).
import { defineConfig } from "drizzle-kit";

export default defineConfig({
  dialect: "postgresql",
  schema: "./src/schema/pg.ts",
  out: "../../drizzle-pg",
});
