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
    // An image that straddles the cut is keyed whole: its digest, at its end, tells it apart.
    const straddling = (url: string) => [
      { role: "system", content: "You describe images." },
      {
        role: "user",
        content: [
          { type: "text", text: "x".repeat(1024 - "user\u001f".length - 8) },
          { type: "image_url", image_url: { url } },
        ],
      },
    ];
    assert.notEqual(key(straddling("data:image/png;base64,QQQQ")), key(straddling("data:image/png;base64,RRRR")));
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
    // The tools count within the preamble's cut: after a short system prompt, not after 20,000 characters.
    const terse = { role: "system", content: "Be terse." };
    assert.notEqual(key([terse], { tools }), key([terse]));
    assert.equal(key([system], { tools }), only);
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

  it("separates apps by their preamble's first blocks, and keeps a conversation's key when the client changes what follows them", () => {
    const first = { role: "user", content: "Same task." };
    const changed = { role: "system", content: `Y${system.content.slice(1)}` };
    assert.notEqual(key([changed, first]), key([system, first]));
    assert.notEqual(key([{ role: "system", content: "Be terse." }, first]), key([{ role: "system", content: "Be kind." }, first]));
    // A timestamp at the end of a long system prompt, new at every turn.
    const dated = (time: string) => ({ role: "system", content: `${longText(8_000, 2)}\nCurrent date and time: ${time}` });
    const turn1 = [dated("2026-11-27T19:37:02Z"), first];
    const turn2 = [dated("2026-11-27T19:38:15Z"), first, { role: "assistant", content: "Looking." }, { role: "user", content: "Go on." }];
    assert.equal(key(turn2), key(turn1));
    // RAG documents, retrieved anew for each question.
    const short = { role: "system", content: longText(2_000, 4) };
    const rag1 = { documents: [{ title: "refunds", text: "Refunds within 30 days." }] };
    const rag2 = { documents: [{ title: "digital", text: "Digital goods are not refundable." }] };
    assert.equal(key([short, first, { role: "assistant", content: "30 days." }, { role: "user", content: "Digital?" }], rag2), key([short, first], rag1));
  });

  it("keys the first message after every leading instruction: developer messages and a second system message", () => {
    const a = { role: "user", content: "Fix the flaky retry test." };
    const b = { role: "user", content: "Add a queue-wait metric." };
    // OpenAI's newer models take the instructions as `developer`.
    const developer = { role: "developer", content: longText(20_000) };
    assert.notEqual(key([developer, a]), key([developer, b]));
    assert.equal(key([developer, a, { role: "assistant", content: "On it." }, { role: "user", content: "Go on." }]), key([developer, a]));
    // Context sent as a second system message.
    const context = { role: "system", content: `Project context:\n${longText(4_000, 5)}` };
    assert.notEqual(key([system, context, a]), key([system, context, b]));
    assert.notEqual(key([system, developer, a], { tools }), key([system, developer, b], { tools }));
    // What is left of the preamble's cut holds the instructions: two apps that open with the same
    // message key apart by their developer prompts, and a developer prompt alone has a key.
    const hello = { role: "user", content: "Hello" };
    assert.notEqual(key([{ role: "developer", content: "Answer in French." }, hello]), key([{ role: "developer", content: "Answer in Welsh." }, hello]));
    assert.notEqual(key([{ role: "developer", content: "Answer in French." }]), "");
  });

  it("keeps a conversation's key when the client puts per-turn context in a later system or developer message", () => {
    const persona = { role: "system", content: "You are a helpful assistant for Acme's support site. Answer briefly." };
    const task = { role: "user", content: "My order 1182 has not arrived, can you check it?" };
    for (const context of [
      (turn: number) => ({ role: "system", content: `Current date and time: 2026-11-27T19:3${turn}:02Z` }),
      (turn: number) => ({ role: "developer", content: `Relevant memories about the user:\n- memory ${turn * 7}` }),
    ]) {
      const history: ChatMessageLike[] = [task];
      const keys = new Set<string>();
      for (let turn = 0; turn < 4; turn++) {
        keys.add(key([persona, context(turn), ...history]));
        history.push({ role: "assistant", content: `Answer ${turn}.` }, { role: "user", content: `Follow-up ${turn}.` });
      }
      assert.equal(keys.size, 1);
    }
  });

  it("keys an image part by the URL it holds now, when a caller edits the part between two keyings", () => {
    const part: Record<string, unknown> = { type: "image_url", image_url: { url: "https://cdn.example/cat.png" } };
    const messages = [{ role: "user", content: [{ type: "text", text: "What is this?" }, part] }];
    const cat = chatBlockKeys(messages);
    const catKey = key(messages);
    (part["image_url"] as { url: string }).url = "https://cdn.example/dog.png";
    const dog = [
      {
        role: "user",
        content: [
          { type: "text", text: "What is this?" },
          { type: "image_url", image_url: { url: "https://cdn.example/dog.png" } },
        ],
      },
    ];
    assert.notDeepEqual(chatBlockKeys(dog), cat);
    assert.deepEqual(chatBlockKeys(messages), chatBlockKeys(dog));
    assert.equal(key(messages), key(dog));
    assert.notEqual(key(messages), catKey);
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
          [{ role: "developer", content }, first, ...later],
          [{ role: "system", content }, { role: "system", content: "More context." }, first, ...later],
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
