import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { TraceRequest } from "../trace/types";
import { blockText, promptText, traceMessages } from "./synth";

const opts = { blockTokens: 512 };
const commonPrefixLength = (a: string, b: string) => {
  let i = 0;
  while (i < a.length && i < b.length && a[i] === b[i]) i++;
  return i;
};
const row = (hashIds: (number | string)[], inputTokens: number): TraceRequest => ({
  index: 0,
  timestampMs: 0,
  sourceTimestampMs: 0,
  inputTokens,
  outputTokens: 10,
  hashIds,
  blockTokens: 512,
  format: "mooncake",
});

describe("prompt synthesis", () => {
  it("a block is deterministic text of blockTokens × 4 characters", () => {
    const a = blockText(7, opts);
    assert.equal(a.length, 2048);
    assert.equal(blockText(7, opts), a);
    assert.match(a, /^[a-z]+ [a-z]+ /);
    assert.notEqual(blockText(8, opts), a);
    assert.equal(blockText("7", { blockTokens: 256 }).length, 1024);
    assert.notEqual(blockText("7", opts), a, "hex id '7' and integer 7 are different blocks");
  });

  it("prompts share a text prefix exactly as far as their hash ids share a prefix", () => {
    const a = promptText([0, 1, 2, 3], opts);
    const b = promptText([0, 1, 2, 9], opts);
    const c = promptText([0, 5, 2, 3], opts);
    const shared = commonPrefixLength(a, b);
    assert.ok(shared >= 3 * 2048 && shared < 4 * 2048, `shared ${shared}`);
    const sharedC = commonPrefixLength(a, c);
    assert.ok(sharedC >= 2048 && sharedC < 2 * 2048, `shared ${sharedC}`);
    assert.ok(promptText([0, 1, 2, 3, 4], opts).startsWith(a), "an extension keeps the whole prefix");
  });

  it("builds system + user messages sized to input_length", () => {
    const messages = traceMessages(row([0, 1, 2], 1100));
    assert.equal(messages.length, 2);
    assert.equal(messages[0]!.role, "system");
    assert.equal(messages[0]!.content, blockText(0, opts));
    assert.equal(messages[1]!.role, "user");
    assert.equal(messages[0]!.content.length + messages[1]!.content.length, 1100 * 4);
    // The partial last block keeps its start, so a longer request still extends this one.
    const longer = traceMessages(row([0, 1, 2, 3], 2000));
    assert.ok(longer[1]!.content.startsWith(messages[1]!.content));
    assert.equal(traceMessages(row([0], 100))[1]!.content, "Continue.");
  });

  it("builds only the blocks input_length reaches, however many hash ids a row has", () => {
    // 300k blocks of 2048 characters would be past V8's longest string: the row must cost 40 characters.
    const many = traceMessages(row(new Array(300_000).fill(7), 10));
    assert.deepEqual(
      many.map((m) => m.content.length),
      [40 - "Continue.".length, "Continue.".length],
    );
    assert.deepEqual(traceMessages(row([0, 1, 2, ...new Array(100_000).fill(9)], 1100)), traceMessages(row([0, 1, 2], 1100)));
  });

  it("a row that ends inside its system block is input_length × 4 characters, the block cut from its end", () => {
    const length = (messages: { content: string }[]) => messages.reduce((sum, m) => sum + m.content.length, 0);
    // One id (a prompt shorter than a block: its partial block 0), and two ids whose input_length
    // ends inside block 0.
    for (const [ids, inputTokens] of [
      [[7], 100],
      [[0, 1], 300],
      [[0], 512],
    ] as const) {
      const messages = traceMessages(row([...ids], inputTokens));
      assert.equal(length(messages), inputTokens * 4, `${ids.length} ids, input_length ${inputTokens}`);
      assert.equal(messages[0]!.role, "system");
      assert.ok(blockText(ids[0], opts).startsWith(messages[0]!.content), "the system text keeps the block's start");
      assert.deepEqual(messages[1], { role: "user", content: "Continue." });
    }
  });

  it("uses an ART-Chat row's recorded messages verbatim", () => {
    const recorded = [{ role: "user", content: "hello" }];
    assert.deepEqual(traceMessages({ ...row(["ab"], 10), body: { messages: recorded } }), recorded);
  });
});
