// What the keys take of an agent's request, as chat templates render it: the system text before the
// tools (Qwen, Granite, Hermes), so two agents with one tool set and different system prompts share no
// tool block the engine does not hold; and of a tool call only what a template renders (id, type,
// function name and arguments), so a call sent back with its `index` (openai-python's stream helper,
// SGLang) keys as the call the LB learned from the reply.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { chatBlockKeys, chatSerialisedLength } from "./index";

const tools = Array.from({ length: 8 }, (_, i) => ({
  type: "function",
  function: { name: `tool_${i}`, description: "Does one thing of the repository. ".repeat(6), parameters: { type: "object" } },
}));
const user = { role: "user", content: "Find where the retry budget is spent, and fix the off-by-one in it." };

function shared<T>(a: ArrayLike<T>, b: ArrayLike<T>): number {
  let n = 0;
  while (n < a.length && n < b.length && a[n] === b[n]) n++;
  return n;
}

describe("tools in the keys", () => {
  it("requests with one tool set and different system prompts share no block past their system prompt", () => {
    const a = chatBlockKeys([{ role: "system", content: "Today is 2026-11-27. You are agent A." }, user], 64, { tools });
    const b = chatBlockKeys([{ role: "system", content: "Today is 2026-11-28. You are agent B." }, user], 64, { tools });
    assert.equal(shared(a, b), 0);
  });

  it("requests with one system prompt and different tool sets share the system prompt's blocks", () => {
    const system = { role: "system", content: "You are a careful engineer who reads the code before changing it. ".repeat(4) };
    const readers = [{ type: "function", function: { name: "read", description: "Reads one file of the repository.", parameters: { type: "object" } } }];
    const a = chatBlockKeys([system, user], 64, { tools });
    const b = chatBlockKeys([system, user], 64, { tools: readers });
    // The tools' piece begins alike (`␝tools:[{"function":{"description":"`): at most the block the
    // system prompt ends in is shared besides.
    const systemBlocks = Math.floor(chatSerialisedLength([system]) / 64);
    assert.ok(shared(a, b) >= systemBlocks && shared(a, b) <= systemBlocks + 1, `${shared(a, b)} shared, the system prompt fills ${systemBlocks}`);
  });

  it("a tool call keys alike with or without its index, and with its type left out", () => {
    const call = { id: "call_7", type: "function", function: { name: "grep", arguments: '{"pattern":"retryBudget"}' } };
    const turn = (calls: unknown[]) => [
      user,
      { role: "assistant", content: null, tool_calls: calls },
      { role: "tool", tool_call_id: "call_7", content: "x".repeat(200) },
    ];
    const plain = chatBlockKeys(turn([call]), 64, { tools });
    assert.deepEqual(chatBlockKeys(turn([{ ...call, index: 0 }]), 64, { tools }), plain);
    assert.deepEqual(chatBlockKeys(turn([{ id: call.id, function: call.function }]), 64, { tools }), plain);
    // What a template does render still keys: another call's arguments give other keys.
    const other = chatBlockKeys(turn([{ ...call, function: { ...call.function, arguments: '{"pattern":"retries"}' } }]), 64, { tools });
    assert.notDeepEqual(other, plain);
  });
});
