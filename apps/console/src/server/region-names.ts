// Region id → name, read from the database. Rows reference regions by id; LB configs, telemetry and
// the pages use names. Every reader that turns one into the other uses this one lookup.
import "server-only";
import type { Queryable } from "@meridian/db";

export async function regionNamesById({ db, tables }: Queryable): Promise<Map<string, string>> {
  const rows = await db.select({ id: tables.regions.id, name: tables.regions.name }).from(tables.regions);
  return new Map(rows.map((r) => [r.id, r.name]));
}
