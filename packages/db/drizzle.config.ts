// drizzle-kit config for SQLite: `cd packages/db && npx drizzle-kit generate` writes SQL migrations
// to the repository's drizzle/ folder (committed); the console applies them at startup. The
// PostgreSQL migrations come from the same declarations: drizzle.pg.config.ts.
import { defineConfig } from "drizzle-kit";

export default defineConfig({
  dialect: "sqlite",
  schema: "./src/schema/index.ts",
  out: "../../drizzle",
});
