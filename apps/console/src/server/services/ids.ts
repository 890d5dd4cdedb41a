// Ids are slugs of the name given at creation: readable in LB configs, telemetry and the audit log,
// and stable across renames.
import "server-only";
import { randomBytes } from "node:crypto";

function slugify(name: string): string {
  const slug = name
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, "-")
    .replace(/^-+|-+$/g, "")
    .slice(0, 48);
  return slug.length > 0 ? slug : "item";
}

/** The slug of `name`, suffixed when `taken` says it is in use (`taken` reads the database). */
export async function newId(name: string, taken: (id: string) => Promise<boolean>): Promise<string> {
  const base = slugify(name);
  if (!(await taken(base))) return base;
  for (;;) {
    const candidate = `${base}-${randomBytes(3).toString("hex")}`;
    if (!(await taken(candidate))) return candidate;
  }
}
