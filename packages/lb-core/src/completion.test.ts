// Next-turn learning at completion when the reply is tool calls: an agent's turn often has no text,
// and its next request sends the calls back, so the index learns them as that next turn.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { type AssistantToolCall, chatBlockKeys } from "@meridian/routing";
import type { Outcome } from "./completion";
import { testCore } from "./test-helpers";

const keys = chatBlockKeys([{ role: "user", content: "x".repeat(300) }]);
const CALL: AssistantToolCall = { id: "call_1", type: "function", function: { name: "grep", arguments: '{"pattern":"retry"}' } };
const served = (reply: string, toolCalls?: AssistantToolCall[]): Outcome => ({
  status: 200,
  error: null,
  usage: { promptTokens: 75, completionTokens: 3, cachedTokens: 0 },
  reply,
  ...(toolCalls !== undefined ? { toolCalls } : {}),
  outputEvents: 3,
  ttftMs: 5,
  e2eMs: 9,
});

describe("next-turn learning of a tool-call reply", () => {
  it("a reply of tool calls alone is learned as the next turn: the calls reach nextTurnKeys", () => {
    const lb = testCore();
    const seen: Array<[string, readonly AssistantToolCall[]]> = [];
    const nextTurnKeys = (reply: string, toolCalls: readonly AssistantToolCall[]) => {
      seen.push([reply, toolCalls]);
      return [...keys, 7];
    };
    const ticket = lb.admit("r", { keys, sessionKey: "s", model: null, hop: 0, promptChars: 300, nextTurnKeys }, 0);
    lb.route(ticket, 0);
    assert.deepEqual(lb.complete(ticket, served("", [CALL]), 10).learn?.keys, [...keys, 7]);
    assert.deepEqual(seen, [["", [CALL]]]);
  });

  it("a text reply is handed over as before, with no tool calls; no reply at all re-learns the prompt", () => {
    const lb = testCore();
    const seen: Array<[string, readonly AssistantToolCall[]]> = [];
    const input = (session: string) => ({
      keys,
      sessionKey: session,
      model: null,
      hop: 0,
      promptChars: 300,
      nextTurnKeys: (reply: string, toolCalls: readonly AssistantToolCall[]) => {
        seen.push([reply, toolCalls]);
        return [...keys, 8];
      },
    });
    const text = lb.admit("r1", input("s1"), 0);
    lb.route(text, 0);
    assert.deepEqual(lb.complete(text, served("a reply"), 10).learn?.keys, [...keys, 8]);
    const none = lb.admit("r2", input("s2"), 0);
    lb.route(none, 0);
    assert.deepEqual(lb.complete(none, served("", []), 10).learn?.keys, keys);
    assert.deepEqual(seen, [["a reply", []]]);
  });
});
