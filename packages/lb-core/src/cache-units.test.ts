// The figures that set an engine's cache report beside the LB's own estimate: admission and load count
// an inline image as the tokens an engine spends on it, not its base64 characters; accuracy and the
// telemetry's cached tokens are in the LB's token units (the prediction's), so an exact prediction
// reads exact everywhere; and a full hit on chat keys keeps its page-rounding slack when the engine's
// prompt_tokens happens to equal the LB's estimate.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { chatBlockKeys, chatSerialisedLength } from "@meridian/routing";
import { servedWithUsage, testCore } from "./test-helpers";

const replicas = [{ id: "a", url: "http://a.test/", region: "us", model: "m" }];
const served = servedWithUsage;

/** A chat request on a replica that the index says holds it all, completed with the engine's usage. */
function servedHit(messages: { role: string; content: unknown }[], usage: (estimate: number, predicted: number) => [number, number]) {
  const keys = chatBlockKeys(messages);
  const promptChars = chatSerialisedLength(messages);
  const lb = testCore({ policy: "prefix-cache", replicas }, { cacheModel: "learned" });
  lb.learn({ index: "local", keys, targetId: "a" }, 0);
  const ticket = lb.admit("r", { keys, sessionKey: "s", model: null, hop: 0, promptChars }, 1_000);
  lb.route(ticket, 1_000);
  const predicted = ticket.target?.predictedCachedTokens ?? 0;
  const [promptTokens, cachedTokens] = usage(ticket.view.inputTokens, predicted);
  const done = lb.complete(ticket, served(promptTokens, cachedTokens), 1_500);
  return { lb, done, predicted, estimate: ticket.view.inputTokens, keys };
}

describe("inline media and the prompt's size", () => {
  it("an inline image is admitted as about a thousand tokens, not refused as a 150k-token prompt", () => {
    const image = `data:image/jpeg;base64,${"/9j/4AAQSkZJRgABAQ".repeat(34_000)}`; // ~612 KB, under maxBodyBytes
    const messages = [
      {
        role: "user",
        content: [
          { type: "text", text: "What is in this picture?" },
          { type: "image_url", image_url: { url: image } },
        ],
      },
    ];
    const lb = testCore({ policy: "least-request" });
    const promptChars = chatSerialisedLength(messages);
    assert.equal(lb.checkPromptTokens({ promptChars }), null);
    const ticket = lb.admit("r", { keys: chatBlockKeys(messages), sessionKey: "s", model: null, hop: 0, promptChars }, 0);
    assert.ok(ticket.view.inputTokens < 2_000, `estimated ${ticket.view.inputTokens} prompt tokens for one image and five words`);
  });
});

describe("accuracy in one unit", () => {
  const messages = [
    { role: "system", content: "You are a helpful assistant. ".repeat(20) },
    { role: "user", content: "Summarise the following text in three bullet points. ".repeat(10) },
  ];

  it("an exact prediction reads exact in the lifetime, LB-wide and telemetry figures, as in the rolling one", () => {
    // The engine's tokenizer gives 3 characters a token (the LB starts at 4) and held every predicted block.
    const { lb, done, predicted, estimate } = servedHit(messages, (estimate, predicted) => [Math.round((estimate * 4) / 3), Math.round((predicted * 4) / 3)]);
    assert.equal(done.cacheReport?.feedback.verdict, "as-predicted");
    const state = lb.state(1_500, { startedAt: 0, telemetry: { lastSeq: 0, bufferSize: 0 } });
    assert.ok((lb.truth.state("a", 1_500).accuracy ?? 0) > 0.99);
    assert.ok((state.replicas[0]?.predictionAccuracy ?? 0) > 0.99, `lifetime accuracy ${state.replicas[0]?.predictionAccuracy}`);
    assert.ok((lb.prediction.accuracy() ?? 0) > 0.99, `LB-wide accuracy ${lb.prediction.accuracy()}`);
    const event = done.telemetry();
    assert.ok(Math.abs((event.actualCachedTokens ?? 0) - predicted) <= 1, `telemetry actual ${event.actualCachedTokens}, predicted ${predicted}`);
    assert.ok((event.actualCachedTokens ?? 0) <= event.inputTokens, "cached tokens above the prompt's: a hit rate over 100 %");
    assert.equal(event.inputTokens, estimate);
  });
});

describe("rounding slack on chat prompts", () => {
  // vLLM computes at least one prompt token: a full hit on 16-token pages reports the pages before it.
  const vllmCached = (promptTokens: number) => Math.floor((promptTokens - 1) / 16) * 16;

  it("a full vLLM hit reads the same whether or not prompt_tokens equals the LB's estimate", () => {
    const messages = [{ role: "user", content: "a".repeat(960 - 6) }]; // 960 canonical characters: 15 keys, 240 tokens
    const verdicts = [240, 241].map((promptTokens) => {
      const { done } = servedHit(messages, () => [promptTokens, vllmCached(promptTokens)]);
      return { verdict: done.cacheReport?.feedback.verdict, trimmed: done.cacheReport?.feedback.trimmed };
    });
    assert.deepEqual(verdicts, [
      { verdict: "as-predicted", trimmed: 0 },
      { verdict: "as-predicted", trimmed: 0 },
    ]);
  });

  it("one-block prompts the engine holds keep being predicted (the horizon does not fall to a block's age)", () => {
    const lb = testCore({ policy: "prefix-cache", replicas }, { cacheModel: "learned" });
    const predictions: number[] = [];
    for (let i = 0; i < 3; i++) {
      const messages = [{ role: "user", content: `q${i}`.padEnd(64 - 6, ".") }]; // one key, 16 tokens
      const keys = chatBlockKeys(messages);
      lb.learn({ index: "local", keys, targetId: "a" }, i * 1_000);
      const ticket = lb.admit("r", { keys, sessionKey: `s${i}`, model: null, hop: 0, promptChars: chatSerialisedLength(messages) }, i * 1_000 + 100);
      lb.route(ticket, i * 1_000 + 100);
      predictions.push(ticket.target?.predictedCachedTokens ?? 0);
      lb.complete(ticket, served(16, vllmCached(16)), i * 1_000 + 200);
    }
    assert.deepEqual(predictions, [16, 16, 16], `horizon ${lb.truth.state("a", 5_000).horizonMs} ms`);
  });
});
