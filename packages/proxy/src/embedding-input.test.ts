import { strict as assert } from "node:assert";
import { test } from "node:test";
import { promptBlockKeys } from "@meridian/routing";
import { HttpError } from "./errors";
import { parseInference } from "./request";

const parse = (body: unknown) => parseInference("embedding", Buffer.from(JSON.stringify(body)), undefined, 16);
const long = "An embedding input long enough to fill a few 64-character blocks of prompt keys. ".repeat(4);

test("an embedding input is keyed like a completion prompt; a batch by its first string, counted whole", () => {
  const single = parse({ model: "m", input: long });
  assert.deepEqual(single.keys, promptBlockKeys(long));
  assert.equal(single.promptChars, long.length);
  assert.equal(single.stream, false);
  const batch = parse({ model: "m", input: [long, "second"] });
  assert.deepEqual(batch.keys, promptBlockKeys(long));
  assert.equal(batch.promptChars, long.length + "second".length);
});

test("token-id inputs are routed: keyed and counted four characters per id, a batch by its first", () => {
  const ids = Array.from({ length: 40 }, (_, i) => i * 4099);
  const single = parse({ input: ids });
  assert.equal(single.promptChars, 160);
  // As deep as the estimate: 16 ids a 64-character block (decimal text made ids of 5 digits 6 wide).
  assert.equal(single.keys.length, 2);
  assert.deepEqual(parse({ input: [ids, [1, 2]] }).keys, single.keys);
  assert.equal(parse({ input: [ids, [1, 2]] }).promptChars, 168);
  // An embedding and a completion of the same ids are the same prompt.
  assert.deepEqual(parseInference("completion", Buffer.from(JSON.stringify({ prompt: ids })), undefined, 16).keys, single.keys);
});

test("a missing, empty or mixed input is a 400 naming 'input'", () => {
  for (const body of [{}, { input: "" }, { input: [] }, { input: ["a", 1] }, { input: [-1] }, { input: { text: "a" } }]) {
    assert.throws(
      () => parse(body),
      (error: unknown) => error instanceof HttpError && error.status === 400 && error.param === "input",
      JSON.stringify(body),
    );
  }
});
