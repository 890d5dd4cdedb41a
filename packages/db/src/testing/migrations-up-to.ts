// The committed SQLite migrations up to and including one tag, as a folder of their own under `dir`:
// a database as an earlier release left it, for the tests that upgrade one (migrations.test.ts,
// migrate-race.test.ts).
import { strict as assert } from "node:assert";
import { cpSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { migrationsFolder } from "../index";

export function migrationsUpTo(dir: string, tag: string): string {
  const folder = join(dir, `up-to-${tag}`);
  cpSync(migrationsFolder(), folder, { recursive: true });
  const journalPath = join(folder, "meta", "_journal.json");
  const journal = JSON.parse(readFileSync(journalPath, "utf8")) as { entries: { tag: string }[] };
  const last = journal.entries.findIndex((e) => e.tag === tag);
  assert.ok(last >= 0, `migration ${tag} not in the journal`);
  writeFileSync(journalPath, JSON.stringify({ ...journal, entries: journal.entries.slice(0, last + 1) }));
  return folder;
}
