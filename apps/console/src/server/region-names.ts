// Region id → name, read from the database. Rows reference regions by id; LB configs, telemetry and
// the pages use names. Every reader that turns one into the other uses this one lookup.
import "server-only";
import { type Db, regions } from "@meridian/db";

export function regionNamesById(db: Pick<Db, "select">): Map<string, string> {
  return new Map(
    db
      .select({ id: regions.id, name: regions.name })
      .from(regions)
      .all()
      .map((r) => [r.id, r.name]),
  );
}
