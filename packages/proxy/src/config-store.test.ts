// The LB's state file (the console's last pushed config) across an upgrade that narrows the config
// schema: a config the LB now refuses is set aside, and the LB starts from its config file; a file
// that is not JSON still stops it with the file named.
import { strict as assert } from "node:assert";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { parseLbConfig } from "@meridian/protocol";
import { ConfigStore } from "./config-store";
import { lbConfig } from "../test/helpers";

test("a persisted config the schema now refuses is moved aside with the reason; one that is not JSON throws", () => {
  const dir = mkdtempSync(join(tmpdir(), "meridian-state-"));
  try {
    const path = join(dir, "lb.json");
    const store = new ConfigStore(path);
    const config = parseLbConfig(lbConfig("lb-us", "us-ashburn", [{ id: "r1", url: "http://127.0.0.1:9", region: "us-ashburn" }]));
    writeFileSync(path, JSON.stringify({ ...config, version: 3, limits: { ...config.limits, bodyTimeoutMs: 2 ** 31 } }));
    assert.equal(store.load(), null);
    assert.match(store.refused ?? "", /bodyTimeoutMs.*at most 2147483647.*moved to .*lb\.json\.refused/);
    assert.equal(existsSync(path), false);
    assert.equal(JSON.parse(readFileSync(`${path}.refused`, "utf8")).version, 3, "kept for the operator to read");

    store.save({ ...config, version: 4 });
    assert.equal(store.load()?.version, 4);
    assert.equal(store.refused, null);

    writeFileSync(path, "{ not json");
    assert.throws(() => store.load(), /state file .*lb\.json/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
