// drizzle-kit config: `cd packages/db && npx drizzle-kit generate` writes SQL migrations to the
// repository's drizzle/ folder (committed); the console applies them with migrate() at startup.
import { defineConfig } from "drizzle-kit";

export default defineConfig({
  dialect: "sqlite",
  schema: "./src/schema/index.ts",
  out: "../../drizzle",
});
