// Width before parsing: a body of too many object members or values is refused unparsed, with a clear
// 400; text full of commas and colons inside strings (a long prompt) is not mistaken for width.
import { strict as assert } from "node:assert";
import { test } from "node:test";
import type { HttpError } from "./errors";
import { MAX_JSON_MEMBERS, MAX_JSON_VALUES, rawTooWide } from "./json-width";
import { parseInference } from "./request";

const chat = (extra: string, content = "hello") => Buffer.from(`{"model":"m","messages":[{"role":"user","content":${JSON.stringify(content)}}]${extra}}`);

test("an object of too many keys, or an array of too many values, is refused before it is parsed", () => {
  const keys = Array.from({ length: MAX_JSON_MEMBERS + 1 }, (_, i) => `"k${i}":0`).join(",");
  const wide = chat(`,"metadata":{${keys}}`);
  assert.throws(
    () => parseInference("chat", [wide], undefined, 4),
    (error: HttpError) => error.status === 400 && error.code === "body_too_wide" && /object members/.test(error.message),
  );
  const zeros = chat(`,"extra":[${"0,".repeat(MAX_JSON_VALUES)}0]`);
  assert.equal(rawTooWide([zeros]), `more than ${MAX_JSON_VALUES} values`);
});

test("a long prompt full of commas and colons is no width: it parses", () => {
  const prose = "key: value, another: one, ".repeat(60_000); // 1.5 MB, 120k of each inside one string
  const body = chat("", prose);
  assert.equal(rawTooWide([body]), null);
  const parsed = parseInference("chat", [body.subarray(0, 100_000), body.subarray(100_000)], undefined, 4);
  assert.equal(parsed.model, "m");
});
