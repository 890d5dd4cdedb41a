// What the LB holds of a stream's tool calls stays within the reply's bound: a tool type other than
// "function" (the only one the next turn's keys know) gives the calls up at once, and an id or name
// sent again replaces the one before instead of adding to the count. A legacy function call (OpenAI's
// deprecated functions API) is put together as openai-node does, and is counted the same way.
import { strict as assert } from "node:assert";
import { test } from "node:test";
import { StreamedToolCalls } from "./tool-calls";

test("a call of an unknown tool type is given up, and nothing of it is held", () => {
  const calls = new StreamedToolCalls();
  for (let index = 0; index < 50; index++)
    calls.add({ tool_calls: [{ index, id: `c${index}`, type: "t".repeat(100_000), function: { name: "f", arguments: "" } }] });
  assert.equal(calls.result(), null);
  assert.equal(calls.chars, 0);
});

test("an id and name repeated on every fragment are counted once; the arguments add up", () => {
  const calls = new StreamedToolCalls();
  for (let i = 0; i < 1_000; i++) calls.add({ tool_calls: [{ index: 0, id: "call_7", type: "function", function: { name: "grep", arguments: "a" } }] });
  assert.deepEqual(calls.result(), [{ id: "call_7", type: "function", function: { name: "grep", arguments: "a".repeat(1_000) } }]);
  const once = new StreamedToolCalls();
  once.add({ tool_calls: [{ index: 0, id: "call_7", type: "function", function: { name: "grep", arguments: "a".repeat(1_000) } }] });
  assert.equal(calls.chars, once.chars);
});

test("a streamed function_call is put together as clients do: the name replaced, the arguments concatenated", () => {
  const calls = new StreamedToolCalls();
  calls.add({ role: "assistant", content: null, function_call: { name: "get_weather", arguments: "" } });
  for (const piece of ['{"city"', ':"Oslo"', "}"]) calls.add({ function_call: { arguments: piece } });
  assert.deepEqual(calls.result(), [{ type: "function_call", function: { name: "get_weather", arguments: '{"city":"Oslo"}' } }]);
  const once = new StreamedToolCalls();
  once.add({ function_call: { name: "get_weather", arguments: '{"city":"Oslo"}' } });
  assert.equal(calls.chars, once.chars);
  assert.ok(once.chars > '{"city":"Oslo"}get_weather'.length);
});
