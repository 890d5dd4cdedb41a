// The session key of a chat that names no session: one per conversation, the same at every turn.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { RoutingInputError } from "../errors";
import { chatBlockKeys, chatBlockKeysWithState, chatSessionKey, type ChatMessageLike, type ChatPromptExtras, sessionKeyFromBlocks } from "./index";

function longText(chars: number, seed = 0): string {
  let out = "";
  for (let i = 0; out.length < chars; i++) out += `word${(i * 7 + seed) % 1000} `;
  return out.slice(0, chars);
}

const system = { role: "system", content: longText(20_000) };
const tools = Array.from({ length: 6 }, (_, i) => ({
  type: "function",
  function: { name: `tool_${i}`, description: "Reads one file of the repository. ".repeat(5), parameters: { type: "object" } },
}));
const key = (messages: readonly ChatMessageLike[], extras: ChatPromptExtras = {}, nBlocks = 16): string => chatSessionKey(messages, extras, nBlocks);

describe("chatSessionKey", () => {
  it("gives two conversations of one agent (one 20,000-character system prompt, one tool set) different keys", () => {
    const a = [system, { role: "user", content: "Fix the flaky retry test in packages/proxy." }];
    const b = [system, { role: "user", content: "Add a metric for queue wait to the console." }];
    assert.notEqual(key(a, { tools }), key(b, { tools }));
    // What keying by the first 16 blocks did: both fell inside the system prompt, one key.
    assert.equal(sessionKeyFromBlocks(chatBlockKeys(a, 64, { tools }), 16), sessionKeyFromBlocks(chatBlockKeys(b, 64, { tools }), 16));
  });

  it("keeps one key over a conversation's turns, from a first turn shorter than the cut on", () => {
    const short = { role: "system", content: "You are terse. ".repeat(20) };
    const turn1 = [short, { role: "user", content: "Hello there, what is a KV cache?" }];
    assert.ok(chatBlockKeys(turn1).length < 16);
    const turn2 = [
      ...turn1,
      { role: "assistant", content: "A store of attention keys and values. ".repeat(30) },
      { role: "user", content: "And prefix caching?" },
    ];
    const turn3 = [...turn2, { role: "assistant", content: "Reusing it across requests." }, { role: "user", content: "Thanks." }];
    assert.equal(key(turn2), key(turn1));
    assert.equal(key(turn3), key(turn1));
    assert.equal(key(turn3, { tools }), key(turn1, { tools }));
  });

  it("keys a long first message by its first nBlocks × 64 characters", () => {
    const task = longText(5_000, 3);
    const a = [system, { role: "user", content: `${task} then stop.` }];
    const b = [system, { role: "user", content: `${task} then go on.` }];
    assert.equal(key(a), key(b), "messages differing only after the cut share a key");
    const early = [system, { role: "user", content: `X${task.slice(1)} then stop.` }];
    assert.notEqual(key(early), key(a), "a difference before the cut separates them");
    const late = [system, { role: "user", content: `${task.slice(0, 1_500)}X${task.slice(1_501)} then stop.` }];
    assert.equal(key(late), key(a));
    assert.notEqual(key(late, {}, 32), key(a, {}, 32), "a deeper cut (sessionKeyBlocks) reaches the difference");
  });

  it("tells first messages apart by their media, not by its bytes alone", () => {
    const withImage = (url: string) => [
      system,
      {
        role: "user",
        content: [
          { type: "text", text: "What is in this picture?" },
          { type: "image_url", image_url: { url } },
        ],
      },
    ];
    const cat = `data:image/png;base64,${"Q".repeat(600_000)}`;
    const dog = `data:image/png;base64,${"R".repeat(600_000)}`;
    assert.equal(key(withImage(cat)), key(withImage(cat)));
    assert.notEqual(key(withImage(cat)), key(withImage(dog)));
    assert.ok(key(withImage(cat)).length <= 11);
    const turn2 = [...withImage(cat), { role: "assistant", content: "A cat." }, { role: "user", content: "What colour?" }];
    assert.equal(key(turn2), key(withImage(cat)));
  });

  it("keys a request with only a system message by what it has", () => {
    const only = key([system]);
    assert.notEqual(only, "");
    assert.equal(key([system]), only);
    assert.notEqual(key([{ role: "system", content: longText(20_000, 1) }]), only);
    assert.notEqual(key([system], { tools }), only);
    assert.notEqual(key([system, { role: "user", content: "Hi" }]), only);
    assert.equal(key([]), "", "nothing to key: the caller falls back");
  });

  it("keys the first message whatever its role, with no system prompt too", () => {
    const a = [{ role: "user", content: "Summarise this diff." }];
    const b = [{ role: "user", content: "Summarise this log." }];
    assert.notEqual(key(a), key(b));
    assert.equal(key([...a, { role: "assistant", content: "Done." }, { role: "user", content: "More." }]), key(a));
    const greeting = [system, { role: "assistant", content: "How can I help?" }];
    assert.equal(key([...greeting, { role: "user", content: "Hello" }]), key(greeting));
  });

  it("separates what differs anywhere in the preamble, not only in its last block", () => {
    const first = { role: "user", content: "Same task." };
    const changed = { role: "system", content: `Y${system.content.slice(1)}` };
    assert.notEqual(key([changed, first]), key([system, first]));
    assert.notEqual(key([system, first], { documents: [{ text: "a" }] }), key([system, first], { documents: [{ text: "b" }] }));
  });

  it("is the same from the whole chat's keying (the proxy's path) as computed alone, at every preamble length", () => {
    const first = { role: "user", content: "Refactor the retry loop. ".repeat(50) };
    const later = [
      { role: "assistant", content: "Done. ".repeat(30) },
      { role: "user", content: "Now the tests." },
    ];
    for (const length of [0, 1, 61, 62, 63, 64, 65, 127, 128, 129, 1_000]) {
      for (const content of [longText(length, length), "日本語の文章と😀 ".repeat(40).slice(0, length)]) {
        for (const messages of [
          [{ role: "system", content }, first, ...later],
          [{ role: "user", content }, first, ...later],
        ]) {
          for (const extras of [{}, { tools }, { documents: [{ text: content }] }]) {
            const alone = chatSessionKey(messages, extras, 4);
            assert.equal(chatSessionKey(messages, extras, 4, 64, chatBlockKeysWithState(messages, 64, extras)), alone, `preamble ${length}`);
            assert.match(alone, /^[0-9a-z]{1,11}$/);
          }
        }
      }
    }
  });

  it("rejects bad input with the field named", () => {
    assert.throws(() => key([system], {}, 0), /nBlocks/);
    assert.throws(() => chatSessionKey([system], {}, 16, 0), /blockChars/);
    assert.throws(() => chatSessionKey(null as unknown as ChatMessageLike[], {}, 16), /messages/);
    assert.throws(() => key([system, { role: "user", content: 42 }]), /messages\[1\]\.content/);
    assert.throws(() => key([system], { tools: "all" }), RoutingInputError);
    assert.throws(() => chatSessionKey([system], {}, 16, 64, { keys: [], preamble: { units: 640, tail: [], next: 1 } }), /keyed/);
  });
});
