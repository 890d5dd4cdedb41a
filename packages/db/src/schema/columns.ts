// One declaration, two dialects. The console runs on SQLite (embedded, `npm start`) or PostgreSQL
// (DATABASE_URL), and drizzle has no table type shared by both: sqlite-core and pg-core build
// different objects. So each schema module declares its columns once through these builders, and
// `defineTable` builds the sqlite-core table and the pg-core table from that one description. Each
// column kind names the one storage choice per dialect, made here and nowhere else:
//   text     TEXT on both (optionally with an enum the row type narrows to)
//   int      INTEGER on both (counts, versions; 32-bit in PostgreSQL)
//   epochMs  a millisecond timestamp: INTEGER in SQLite, BIGINT (read back as a JS number) in PG
//   real     REAL in SQLite, DOUBLE PRECISION in PG (PG's REAL is float4 and would round weights)
//   bool     INTEGER 0/1 in SQLite (drizzle's boolean mode), BOOLEAN in PG
//   id       an auto-incrementing INTEGER primary key: AUTOINCREMENT in SQLite, an identity in PG
// Both tables carry the same column keys and the same TypeScript row types, so a query written
// against one is the same query against the other.
import type { BuildColumns, ColumnBuilderBase, HasDefault, IsPrimaryKey, NotNull } from "drizzle-orm";
import * as pg from "drizzle-orm/pg-core";
import * as sqlite from "drizzle-orm/sqlite-core";

type ForeignKeyActions = { onDelete?: "cascade" | "set null" | "restrict" | "no action" };

/** A column as both dialects build it. Each modifier applies to both builders, so the two never drift. */
class Column<S extends ColumnBuilderBase, P extends ColumnBuilderBase> {
  constructor(
    readonly sqlite: S,
    readonly pg: P,
  ) {}

  notNull(): Column<NotNull<S>, NotNull<P>> {
    return new Column(builder(this.sqlite).notNull() as NotNull<S>, builder(this.pg).notNull() as NotNull<P>);
  }

  default(value: S["_"]["data"] & P["_"]["data"]): Column<HasDefault<S>, HasDefault<P>> {
    return new Column(builder(this.sqlite).default(value) as HasDefault<S>, builder(this.pg).default(value) as HasDefault<P>);
  }

  primaryKey(): Column<IsPrimaryKey<NotNull<S>>, IsPrimaryKey<NotNull<P>>> {
    return new Column(builder(this.sqlite).primaryKey() as IsPrimaryKey<NotNull<S>>, builder(this.pg).primaryKey() as IsPrimaryKey<NotNull<P>>);
  }

  unique(): Column<S, P> {
    return new Column(builder(this.sqlite).unique() as S, builder(this.pg).unique() as P);
  }

  /** A foreign key to `column` of `table()` (a thunk, so a table may reference itself or one declared later). */
  references(table: () => AnyTablePair, column: string, actions: ForeignKeyActions = {}): Column<S, P> {
    const sqliteBuilder = builder(this.sqlite) as unknown as sqlite.SQLiteColumnBuilder;
    const pgBuilder = builder(this.pg) as unknown as pg.PgColumnBuilder;
    sqliteBuilder.references(() => (table().sqlite as unknown as Record<string, sqlite.SQLiteColumn>)[column] as sqlite.SQLiteColumn, actions);
    pgBuilder.references(() => (table().pg as unknown as Record<string, pg.PgColumn>)[column] as pg.PgColumn, actions);
    return this;
  }
}

/** The runtime builders behind the type-level ones (drizzle's modifiers return `this`, re-typed). */
interface ChainableBuilder {
  notNull(): unknown;
  default(value: unknown): unknown;
  primaryKey(): unknown;
  unique(): unknown;
}
function builder(b: ColumnBuilderBase): ChainableBuilder {
  return b as unknown as ChainableBuilder;
}

type Enum = readonly [string, ...string[]];

/** The column kinds (see the header for what each is in each dialect). */
export const col = {
  text: <const E extends Enum = [string, ...string[]]>(name: string, options?: { enum: E }) =>
    new Column(sqlite.text(name, options as { enum: E }), pg.text(name, options as { enum: E })),
  int: (name: string) => new Column(sqlite.integer(name), pg.integer(name)),
  epochMs: (name: string) => new Column(sqlite.integer(name), pg.bigint(name, { mode: "number" })),
  real: (name: string) => new Column(sqlite.real(name), pg.doublePrecision(name)),
  bool: (name: string) => new Column(sqlite.integer(name, { mode: "boolean" }), pg.boolean(name)),
  id: (name: string) => new Column(sqlite.integer(name).primaryKey({ autoIncrement: true }), pg.integer(name).primaryKey().generatedByDefaultAsIdentity()),
};

type AnyColumn = Column<ColumnBuilderBase, ColumnBuilderBase>;
type Columns = Record<string, AnyColumn>;
type SqliteBuilders<C extends Columns> = { [K in keyof C]: C[K]["sqlite"] };
type PgBuilders<C extends Columns> = { [K in keyof C]: C[K]["pg"] };

/** Indexes, uniques and a composite primary key, by column key. */
export interface TableExtras<C extends Columns> {
  indexes?: { name: string; on: (keyof C & string)[]; unique?: boolean }[];
  primaryKey?: (keyof C & string)[];
}

export interface TablePair<N extends string, C extends Columns> {
  sqlite: sqlite.SQLiteTableWithColumns<{
    name: N;
    schema: undefined;
    columns: BuildColumns<N, SqliteBuilders<C>, "sqlite">;
    dialect: "sqlite";
  }>;
  pg: pg.PgTableWithColumns<{ name: N; schema: undefined; columns: BuildColumns<N, PgBuilders<C>, "pg">; dialect: "pg" }>;
}

/** Any table pair, for references (a self-reference cannot name its own, still inferring, type). */
export interface AnyTablePair {
  sqlite: sqlite.SQLiteTable;
  pg: pg.PgTable;
}

/** Builds the table in both dialects from one description. */
export function defineTable<N extends string, C extends Columns>(name: N, columns: C, extras: TableExtras<C> = {}): TablePair<N, C> {
  const pick = <D extends "sqlite" | "pg">(dialect: D) => Object.fromEntries(Object.entries(columns).map(([key, column]) => [key, column[dialect]]));
  const sqliteTable = sqlite.sqliteTable(name, pick("sqlite") as Record<string, sqlite.SQLiteColumnBuilderBase>, (t) => [
    ...(extras.indexes ?? []).map((ix) => {
      const on = ix.on.map((key) => t[key] as sqlite.SQLiteColumn) as [sqlite.SQLiteColumn, ...sqlite.SQLiteColumn[]];
      return (ix.unique ? sqlite.uniqueIndex(ix.name) : sqlite.index(ix.name)).on(...on);
    }),
    ...(extras.primaryKey ? [sqlite.primaryKey({ columns: extras.primaryKey.map((key) => t[key] as sqlite.SQLiteColumn) as [sqlite.SQLiteColumn] })] : []),
  ]);
  const pgTable = pg.pgTable(name, pick("pg") as Record<string, pg.PgColumnBuilderBase>, (t) => [
    ...(extras.indexes ?? []).map((ix) => {
      const on = ix.on.map((key) => t[key] as pg.PgColumn) as [pg.PgColumn, ...pg.PgColumn[]];
      return (ix.unique ? pg.uniqueIndex(ix.name) : pg.index(ix.name)).on(...on);
    }),
    ...(extras.primaryKey ? [pg.primaryKey({ columns: extras.primaryKey.map((key) => t[key] as pg.PgColumn) as [pg.PgColumn] })] : []),
  ]);
  return { sqlite: sqliteTable, pg: pgTable } as unknown as TablePair<N, C>;
}
