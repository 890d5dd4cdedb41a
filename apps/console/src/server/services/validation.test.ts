import { strict as assert } from "node:assert";
import { test } from "node:test";
import { requireHttpUrl } from "./validation";

test("a replica's or LB's URL is a base URL: trailing slashes trimmed, a path kept", () => {
  assert.equal(requireHttpUrl("url", "http://127.0.0.1:8000/"), "http://127.0.0.1:8000");
  assert.equal(requireHttpUrl("url", "https://lb.example.com/meridian//"), "https://lb.example.com/meridian");
});

test("URLs an LB or the console's admin calls cannot use are refused with the reason", () => {
  for (const [value, reason] of [
    ["http://127.0.0.1:0", /port 0/],
    ["http://127.0.0.1:8000/?v=1", /query string/],
    ["http://127.0.0.1:8000/#top", /fragment/],
    // A bare "?" or "#" has an empty URL.search / URL.hash, yet still swallows every path joined on.
    ["http://127.0.0.1:8000/?", /query string/],
    ["http://127.0.0.1:8000/meridian?/", /query string/],
    ["http://127.0.0.1:8000/#", /fragment/],
    ["http://user:secret@127.0.0.1:8000", /credentials/],
    ["ftp://127.0.0.1:8000", /not a URL an LB accepts/],
  ] as const) {
    assert.throws(
      () => requireHttpUrl("url", value),
      (error: Error) => reason.test(error.message) && error.message.includes(value),
      value,
    );
  }
});
