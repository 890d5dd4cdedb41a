// Nesting depth, before and after parsing: the raw scan agrees with the parsed walk, ignores brackets
// inside strings (escaped quotes included, split across socket chunks anywhere), and neither can be
// made to overflow the stack.
import { strict as assert } from "node:assert";
import { test } from "node:test";
import { rawNestsDeeperThan, valueNestsDeeperThan } from "./json-depth";

function depthOf(value: unknown): number {
  if (typeof value !== "object" || value === null) return 0;
  const children = Array.isArray(value) ? value : Object.values(value);
  return 1 + children.reduce((max: number, child) => Math.max(max, depthOf(child)), 0);
}

/** The body split into socket-sized chunks at every `size` bytes. */
function chunks(text: string, size: number): Buffer[] {
  const bytes = Buffer.from(text);
  const parts: Buffer[] = [];
  for (let i = 0; i < bytes.length; i += size) parts.push(bytes.subarray(i, i + size));
  return parts;
}

test("the parsed walk and the raw scan agree with the true depth", () => {
  const bodies: unknown[] = [
    {},
    { a: 1 },
    { messages: [{ role: "user", content: [{ type: "text", text: "[[[[{{{{" }] }] },
    [[[[]]]],
    { s: 'quote \\" and ] and } and \\\\', deeper: { x: [[{ y: [] }]] } },
    { tools: [{ function: { parameters: { type: "object", properties: { a: { type: "array", items: { type: "string" } } } } } }] },
  ];
  for (const body of bodies) {
    const depth = depthOf(body);
    const text = JSON.stringify(body);
    for (const limit of [depth - 1, depth, depth + 1]) {
      if (limit < 1) continue;
      assert.equal(valueNestsDeeperThan(body, limit), depth > limit, `${text} at ${limit}`);
      for (const size of [1, 2, 3, 7, text.length])
        assert.equal(rawNestsDeeperThan(chunks(text, size), limit), depth > limit, `${text} at ${limit}, chunks of ${size}`);
    }
  }
});

test("brackets inside strings never count, whatever the escapes", () => {
  const text = JSON.stringify({ prompt: "[".repeat(500) + '\\"' + "{".repeat(500) + '"\\\\' });
  assert.equal(rawNestsDeeperThan(chunks(text, 5), 2), false);
  assert.equal(valueNestsDeeperThan(JSON.parse(text), 1), false);
});

test("a nesting bomb neither overflows the stack nor is walked to the bottom", () => {
  const depth = 200_000;
  const text = "[".repeat(depth) + "]".repeat(depth);
  assert.equal(rawNestsDeeperThan([Buffer.from(text)], 64), true);
  assert.equal(valueNestsDeeperThan(JSON.parse(text), 64), true);
});
