// @meridian/db: the console's schema (one module per table, declared once for SQLite and
// PostgreSQL), its clients and migrations. The SQLite tables are exported by name; the PostgreSQL
// ones are `pgTables`, and code that runs on both takes its tables from a Store (database.ts).
export { openDb, migrate, migrationsFolder, type Db } from "./client";
export {
  createDatabase,
  isPostgresUrl,
  type Database,
  type DatabaseSettings,
  type PgDb,
  type PostgresDatabase,
  type Queryable,
  type SqliteDatabase,
  type Store,
  type StoreDb,
} from "./database";
export { sqliteStore } from "./sqlite-store";
export { databaseNowMs, largerOf } from "./sql";
export * from "./schema/index";
export * as pgTables from "./schema/pg";
