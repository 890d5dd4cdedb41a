import { strict as assert } from "node:assert";
import { after, before, test } from "node:test";
import { createHarness, OPERATOR, type Harness } from "../testing/harness";
import { createRegion, listRegions, updateRegion } from "./regions";

let h: Harness;
before(async () => {
  h = await createHarness();
});
after(async () => h.close());

const displayNameOf = async (name: string) => (await listRegions(h.rt)).find((r) => r.name === name)?.displayName;

test("a blank display name is stored as null (the pages show the dash only for null)", async () => {
  await createRegion(h.rt, OPERATOR, { name: "us-ashburn", displayName: "Ashburn" });
  await updateRegion(h.rt, OPERATOR, { id: "us-ashburn", displayName: "" });
  assert.equal(await displayNameOf("us-ashburn"), null);
  await updateRegion(h.rt, OPERATOR, { id: "us-ashburn", displayName: "  Ashburn, VA  " });
  assert.equal(await displayNameOf("us-ashburn"), "Ashburn, VA");
  await updateRegion(h.rt, OPERATOR, { id: "us-ashburn", displayName: "   " });
  assert.equal(await displayNameOf("us-ashburn"), null);
  // Left out: unchanged; null: cleared.
  await updateRegion(h.rt, OPERATOR, { id: "us-ashburn", displayName: "Ashburn" });
  await updateRegion(h.rt, OPERATOR, { id: "us-ashburn", name: "us-east" });
  assert.equal(await displayNameOf("us-east"), "Ashburn");
  await updateRegion(h.rt, OPERATOR, { id: "us-ashburn", displayName: null });
  assert.equal(await displayNameOf("us-east"), null);
});

test("creating with a blank display name stores null too", async () => {
  await createRegion(h.rt, OPERATOR, { name: "eu-frankfurt", displayName: " " });
  assert.equal(await displayNameOf("eu-frankfurt"), null);
});
