// The forwards no peer report shows yet (forward-ledger.ts): counted by the peer's URL and model,
// from placement until the forward ends here or a report whose poll left after it shows it.
import assert from "node:assert/strict";
import { it } from "node:test";
import { ForwardLedger } from "./forward-ledger";

const EU = "http://eu.test/";
const AP = "http://ap.test/";

it("counts a forward from its placement, by URL and by model, until it ends or a report shows it", () => {
  const ledger = new ForwardLedger();
  const [a, b, c] = [{}, {}, {}];
  ledger.placed(a, EU, "m");
  ledger.placed(b, EU, "other");
  ledger.placed(c, AP, null);
  assert.deepEqual([ledger.unshown(EU, null), ledger.unshown(EU, "m"), ledger.unshown(AP, null), ledger.unshown(AP, "m")], [2, 1, 1, 0]);
  // Not left yet: no report shows it.
  ledger.shown(EU, 1_000);
  assert.equal(ledger.unshown(EU, null), 2);
  ledger.left(a, 100);
  ledger.left(b, 2_000);
  ledger.shown(EU, 1_000);
  assert.deepEqual([ledger.unshown(EU, null), ledger.unshown(EU, "m"), ledger.unshown(EU, "other")], [1, 0, 1]);
  ledger.ended(b);
  ledger.ended(b);
  assert.equal(ledger.unshown(EU, null), 0);
  assert.equal(ledger.unshown(AP, null), 1, "another peer's forwards stay");
});

it("a request placed again is counted once, where it was placed last", () => {
  const ledger = new ForwardLedger();
  const request = {};
  ledger.placed(request, EU, "m");
  ledger.placed(request, AP, "m");
  assert.deepEqual([ledger.unshown(EU, "m"), ledger.unshown(AP, "m")], [0, 1]);
});
