// What teaches the LB its characters per token: only a text-only prompt's answer. A prompt with media
// parts (each a fixed stand-in the engine does not spend) or of token ids (sized in tokens, exactly)
// says nothing of the fleet's text, and a run of them must not move the ratio every chat prompt is
// admitted and loaded by. Token ids are admitted, and held to the prompt limit, by their count.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { AdmitInput } from "./ticket";
import type { Outcome } from "./completion";
import { testCore } from "./test-helpers";

const served = (promptTokens: number): Outcome => ({
  status: 200,
  error: null,
  usage: { promptTokens, completionTokens: 1, cachedTokens: 0 },
  reply: "",
  outputEvents: 1,
  ttftMs: 1,
  e2eMs: 2,
});

function serve(lb: ReturnType<typeof testCore>, size: Partial<AdmitInput>, promptTokens: number, now: number): void {
  const ticket = lb.admit("r", { keys: [], sessionKey: "s", model: null, hop: 0, ...size }, now);
  lb.route(ticket, now);
  lb.complete(ticket, served(promptTokens), now + 1);
}

describe("calibrating the token estimate", () => {
  it("text-only answers move the ratio; answers to prompts with media parts or of token ids do not", () => {
    const lb = testCore();
    for (let i = 0; i < 50; i++) serve(lb, { promptChars: 12_000 }, 10_000, i * 10);
    const cjk = lb.estimator.charsPerToken;
    assert.ok(cjk < 1.3, `text calibrated the ratio to ${cjk}`);
    // Vision answers: the engine spent 2500 tokens on an image the LB counts as 4096 characters.
    for (let i = 0; i < 60; i++) serve(lb, { promptChars: 4_500, calibrates: false }, 2_600, 1_000 + i * 10);
    // Token ids: 900 tokens, exactly.
    for (let i = 0; i < 20; i++) serve(lb, { inputTokens: 900, tokensPerBlock: 16 }, 900, 2_000 + i * 10);
    assert.equal(lb.estimator.charsPerToken, cjk);
  });

  it("a token-id prompt is held to the prompt limit by its count, whatever the text ratio", () => {
    const lb = testCore({ limits: { maxPromptTokens: 4_000 } });
    for (let i = 0; i < 50; i++) serve(lb, { promptChars: 12_000 }, 10_000, i * 10);
    assert.equal(lb.checkPromptTokens({ inputTokens: 3_000 }), null);
    assert.equal(lb.checkPromptTokens({ inputTokens: 4_001 })?.code, "context_length_exceeded");
    // The same 3000 ids read as 12000 characters of CJK text would be "10000 tokens".
    assert.equal(lb.checkPromptTokens({ promptChars: 12_000 })?.code, "context_length_exceeded");
    const ticket = lb.admit("r", { keys: [], sessionKey: "s", model: null, hop: 0, inputTokens: 3_000, tokensPerBlock: 16 }, 1_000);
    assert.equal(ticket.view.inputTokens, 3_000);
    assert.equal(lb.route(ticket, 1_000).kind, "replica");
  });
});
