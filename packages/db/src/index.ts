// @meridian/db: the console's SQLite schema (one module per table), client and migrations.
export { openDb, migrate, migrationsFolder, type Db } from "./client";
export * from "./schema/index";
