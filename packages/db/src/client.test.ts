import { strict as assert } from "node:assert";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { eq } from "drizzle-orm";
import { migrate, openDb, regions, loadBalancers } from "./index";

const dir = mkdtempSync(join(tmpdir(), "meridian-db-"));
after(() => rmSync(dir, { recursive: true, force: true }));

test("openDb + migrate creates every table in WAL mode with foreign keys on, idempotently", () => {
  const db = openDb(join(dir, "nested", "m.db"));
  migrate(db);
  migrate(db);
  assert.equal(db.$client.pragma("journal_mode", { simple: true }), "wal");
  assert.equal(db.$client.pragma("foreign_keys", { simple: true }), 1);
  db.insert(regions).values({ id: "us", name: "us", createdAt: 1 }).run();
  assert.equal(db.select().from(regions).where(eq(regions.id, "us")).get()?.name, "us");
  assert.throws(() => db.insert(loadBalancers).values({ id: "lb", name: "lb", url: "http://x", regionId: "nope", createdAt: 1 }).run());
  db.$client.close();
});
