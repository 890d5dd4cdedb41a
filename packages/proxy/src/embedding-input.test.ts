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

test("token-id inputs are routed: keyed by their decimal text, four characters per id", () => {
  const ids = Array.from({ length: 40 }, (_, i) => i);
  assert.equal(parse({ input: ids }).promptChars, 160);
  assert.deepEqual(parse({ input: [ids, [1, 2]] }).keys, promptBlockKeys(ids.join(" ")));
  assert.equal(parse({ input: [ids, [1, 2]] }).promptChars, 168);
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
