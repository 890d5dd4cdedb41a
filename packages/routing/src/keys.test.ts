import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { RoutingInputError } from "./errors";
import { LANE1_MUL, LANE2_MUL, finalizeLanes, hashString, hashString32, seedLane1, seedLane2 } from "./hash";
import {
  MESSAGE_SEPARATOR,
  NON_TEXT_PART_CHARS,
  ROLE_SEPARATOR,
  chatBlockKeys,
  chatBlockKeysWithState,
  chatSerialisedLength,
  continueChatBlockKeys,
  continuePromptBlockKeys,
  promptBlockKeys,
  promptBlockKeysWithState,
  sessionKeyFromBlocks,
  traceBlockKeys,
} from "./keys";
import { createRng } from "./rng";

const SYSTEM = "You are a helpful assistant. Answer briefly and cite sources.";

function longText(chars: number, seed = 0): string {
  let out = "";
  for (let i = 0; out.length < chars; i++) out += `token${(i * 7 + seed) % 1000} `;
  return out.slice(0, chars);
}

describe("hash", () => {
  it("is pinned: the same values in every process, so LBs and peers agree on keys", () => {
    assert.equal(hashString("hello"), 4897424287887949);
    assert.equal(hashString32("abc"), 2054023562);
    assert.notEqual(hashString(""), hashString("\u0000"));
  });

  it("returns unsigned integers below 2^53", () => {
    for (let i = 0; i < 1000; i++) {
      const h = hashString(`k${i}`);
      assert.ok(Number.isSafeInteger(h) && h >= 0);
    }
  });
});

describe("promptBlockKeys", () => {
  it("keys only full 64-char blocks, pinned values", () => {
    assert.deepEqual(promptBlockKeys("a".repeat(130)), [3395888733061549, 7713207730205836]);
    assert.deepEqual(promptBlockKeys("日本語の文章と émoji 😀 ".repeat(8)), [8777831466610578, 1580752436025338]);
    assert.deepEqual(promptBlockKeys("a".repeat(63)), []);
    assert.equal(promptBlockKeys("a".repeat(64)).length, 1);
  });

  it("chains: a block's key depends on every earlier block", () => {
    const a = promptBlockKeys(`${"x".repeat(64)}${"y".repeat(64)}`);
    const b = promptBlockKeys(`${"z".repeat(64)}${"y".repeat(64)}`);
    assert.notEqual(a[0], b[0]);
    assert.notEqual(a[1], b[1], "same second block behind a different first block must differ");
    // Identical blocks at different positions get different keys too.
    const same = promptBlockKeys("q".repeat(192));
    assert.equal(new Set(same).size, 3);
  });

  it("shares exactly the common full blocks of two prompts that diverge", () => {
    const base = longText(1000);
    const a = promptBlockKeys(`${base}first branch ${longText(300, 1)}`);
    const b = promptBlockKeys(`${base}other branch ${longText(300, 2)}`);
    const shared = Math.floor(1000 / 64);
    assert.deepEqual(a.slice(0, shared), b.slice(0, shared));
    assert.notEqual(a[shared + 1], b[shared + 1]);
  });

  it("honours a custom block size and rejects a bad one", () => {
    assert.equal(promptBlockKeys("a".repeat(100), 10).length, 10);
    assert.throws(() => promptBlockKeys("abc", 0), RoutingInputError);
    assert.throws(() => promptBlockKeys("abc", 1.5), /blockChars/);
    assert.throws(() => promptBlockKeys(42 as unknown as string), /prompt/);
  });
});

describe("chatBlockKeys", () => {
  const conversation = [
    { role: "system", content: SYSTEM },
    {
      role: "user",
      content: [
        { type: "text", text: "What is the capital of France? " },
        { type: "text", text: "And of Germany?" },
      ],
    },
  ];

  it("is deterministic with a pinned value", () => {
    assert.deepEqual(chatBlockKeys(conversation), [7821332540533495]);
    assert.deepEqual(chatBlockKeys(conversation), chatBlockKeys(structuredClone(conversation)));
  });

  it("treats text parts exactly like the concatenated string", () => {
    const asString = [conversation[0]!, { role: "user", content: "What is the capital of France? And of Germany?" }];
    const long = [
      {
        role: "user",
        content: [
          { type: "text", text: longText(500) },
          { type: "text", text: longText(500, 3) },
        ],
      },
    ];
    const longString = [{ role: "user", content: longText(500) + longText(500, 3) }];
    assert.deepEqual(chatBlockKeys(asString), chatBlockKeys(conversation));
    assert.deepEqual(chatBlockKeys(long), chatBlockKeys(longString));
  });

  it("makes the prompt's keys a prefix of prompt + assistant reply (next-turn learning)", () => {
    const messages = [
      { role: "system", content: longText(700) },
      { role: "user", content: longText(333, 5) },
    ];
    const reply = longText(517, 9);
    const prompt = chatBlockKeys(messages);
    const nextTurn = chatBlockKeys([...messages, { role: "assistant", content: reply }]);
    assert.ok(nextTurn.length > prompt.length);
    assert.deepEqual(nextTurn.slice(0, prompt.length), prompt);
    // And the next user turn extends that again.
    const thirdTurn = chatBlockKeys([...messages, { role: "assistant", content: reply }, { role: "user", content: "thanks!" }]);
    assert.deepEqual(thirdTurn.slice(0, nextTurn.length), nextTurn);
  });

  it("separates roles: the same text under another role is another prompt", () => {
    const text = longText(200);
    assert.notDeepEqual(chatBlockKeys([{ role: "user", content: text }]), chatBlockKeys([{ role: "system", content: text }]));
  });

  it("keys different images differently and accepts null content", () => {
    const image = (url: string) => [
      {
        role: "user",
        content: [
          { type: "image_url", image_url: { url } },
          { type: "text", text: longText(100) },
        ],
      },
    ];
    assert.notDeepEqual(chatBlockKeys(image("https://x/a.png")), chatBlockKeys(image("https://x/b.png")));
    assert.doesNotThrow(() => chatBlockKeys([{ role: "assistant", content: null }]));
  });

  it("keys what a chat template renders besides the text: tool calls, names, tool call ids, audio and files", () => {
    const tail = { role: "user", content: longText(300, 4) };
    const agent = (city: string, extra: Record<string, unknown> = {}) => [
      { role: "system", content: SYSTEM },
      { role: "user", content: longText(200) },
      {
        role: "assistant",
        content: null,
        tool_calls: [{ id: "call_1", type: "function", function: { name: "book_flight", arguments: JSON.stringify({ to: city }) } }],
      },
      { role: "tool", tool_call_id: "call_1", content: "ok", ...extra },
      tail,
    ];
    // The engine's prompts diverge at the tool call: the blocks after it must differ.
    assert.notEqual(chatBlockKeys(agent("Paris")).at(-1), chatBlockKeys(agent("Tokyo")).at(-1));
    assert.notEqual(chatBlockKeys(agent("Paris")).at(-1), chatBlockKeys(agent("Paris", { tool_call_id: "call_2" })).at(-1));
    assert.notEqual(chatBlockKeys(agent("Paris")).at(-1), chatBlockKeys(agent("Paris", { name: "booking" })).at(-1));
    const legacy = (args: string) => [{ role: "assistant", content: null, function_call: { name: "f", arguments: args } }, tail];
    assert.notEqual(chatBlockKeys(legacy("{}")).at(-1), chatBlockKeys(legacy('{"a":1}')).at(-1));
    const withPart = (part: unknown) => [{ role: "user", content: [part, { type: "text", text: longText(200) }] }];
    const audio = (data: string) => withPart({ type: "input_audio", input_audio: { data, format: "wav" } });
    assert.notEqual(chatBlockKeys(audio("UklGRiQAAABXQVZF")).at(-1), chatBlockKeys(audio("UklGRjQAAABXQVZF")).at(-1));
    const file = (file_data: string) => withPart({ type: "file", file: { filename: "a.pdf", file_data } });
    assert.notEqual(chatBlockKeys(file("JVBERi0xLjQK")).at(-1), chatBlockKeys(file("JVBERi0xLjUK")).at(-1));
  });

  it("keys the same tool call the same however a client orders its JSON fields", () => {
    const call = (fn: Record<string, unknown>) => [
      { role: "assistant", content: null, tool_calls: [{ id: "c", type: "function", function: fn }] },
      { role: "user", content: longText(200) },
    ];
    assert.deepEqual(chatBlockKeys(call({ name: "f", arguments: "{}" })), chatBlockKeys(call({ arguments: "{}", name: "f" })));
  });

  it("rejects malformed messages with the offending field named", () => {
    assert.throws(() => chatBlockKeys([{ role: 3 as unknown as string, content: "x" }]), /messages\[0\]\.role/);
    assert.throws(() => chatBlockKeys([{ role: "user", content: 42 }]), /messages\[0\]\.content/);
    assert.throws(() => chatBlockKeys([{ role: "user", content: [7] }]), /messages\[0\]\.content\[0\]/);
    assert.throws(() => chatBlockKeys([{ role: "user", content: [{ type: "text", text: 5 }] }]), /messages\[0\]\.content\[0\]\.text/);
    assert.throws(() => chatBlockKeys("nope" as unknown as []), /messages/);
  });
});

/** The keying rule written the slow, obvious way: block k covers units [k·B, (k+1)·B) of the
 * concatenated pieces; its bytes are the UTF-8 of each piece's slice inside it; words are
 * little-endian, the tail zero-padded, the byte length mixed in; keys chain from 0. */
function referenceKeys(pieces: readonly string[], blockChars: number): number[] {
  const encoder = new TextEncoder();
  const total = pieces.reduce((sum, p) => sum + p.length, 0);
  const keys: number[] = [];
  let prev = 0;
  for (let b = 0; b < Math.floor(total / blockChars); b++) {
    const bytes: number[] = [];
    let offset = 0;
    for (const piece of pieces) {
      const from = Math.max(b * blockChars, offset);
      const to = Math.min((b + 1) * blockChars, offset + piece.length);
      if (from < to) bytes.push(...encoder.encode(piece.slice(from - offset, to - offset)));
      offset += piece.length;
    }
    let h1 = seedLane1(prev);
    let h2 = seedLane2(prev);
    for (let i = 0; i < bytes.length; i += 4) {
      const word = (bytes[i] ?? 0) | ((bytes[i + 1] ?? 0) << 8) | ((bytes[i + 2] ?? 0) << 16) | ((bytes[i + 3] ?? 0) << 24);
      h1 = Math.imul(h1 ^ word, LANE1_MUL);
      h2 = Math.imul(h2 ^ word, LANE2_MUL);
    }
    prev = finalizeLanes(h1 ^ bytes.length, h2);
    keys.push(prev);
  }
  return keys;
}

describe("block keying matches the reference rule on any text", () => {
  const alphabets: Record<string, string[]> = {
    ascii: ["a", "b", " ", "z", "\n", "7"],
    rare: [..."abcdefghij ".split(""), ..."abcdefghij ".split(""), "é"],
    mixed: ["a", " ", "é", "ß", "日", "本", "😀", "’"],
    surrogates: ["a", "😀", "\ud800", "\udc00", "日"],
  };
  const rng = createRng(11);
  function randomText(alphabet: string[], length: number): string {
    let out = "";
    while (out.length < length) out += alphabet[Math.floor(rng.next() * alphabet.length)];
    return out;
  }

  it("for prompts and chats, across chunk sizes, block sizes and piece splits", () => {
    for (const [name, alphabet] of Object.entries(alphabets)) {
      for (const blockChars of [64, 7, 1, 130]) {
        for (let round = 0; round < 6; round++) {
          const length = Math.floor(rng.next() * 10_000);
          const text = randomText(alphabet, length);
          assert.deepEqual(promptBlockKeys(text, blockChars), referenceKeys([text], blockChars), `${name} prompt B=${blockChars} len=${length}`);
          const parts = [randomText(alphabet, Math.floor(rng.next() * 300)), text, randomText(alphabets.ascii!, Math.floor(rng.next() * 5000))];
          const messages = [
            { role: "system", content: parts[0] },
            {
              role: "user",
              content: [
                { type: "text", text: parts[1] },
                { type: "text", text: parts[2] },
              ],
            },
          ];
          const pieces = ["system", ROLE_SEPARATOR, parts[0]!, MESSAGE_SEPARATOR, "user", ROLE_SEPARATOR, parts[1]!, parts[2]!, MESSAGE_SEPARATOR];
          assert.deepEqual(chatBlockKeys(messages, blockChars), referenceKeys(pieces, blockChars), `${name} chat B=${blockChars}`);
        }
      }
    }
  });

  it("gives text parts the same keys as their concatenation, also for non-ASCII text", () => {
    const text = randomText(alphabets.mixed!, 9000).replace(/[\ud800-\udfff]/g, "x");
    const cut = 4321;
    assert.deepEqual(
      chatBlockKeys([
        {
          role: "user",
          content: [
            { type: "text", text: text.slice(0, cut) },
            { type: "text", text: text.slice(cut) },
          ],
        },
      ]),
      chatBlockKeys([{ role: "user", content: text }]),
    );
  });

  it("keeps prompt keys a prefix of prompt + reply keys for non-ASCII conversations", () => {
    const messages = [{ role: "user", content: randomText(alphabets.surrogates!, 3000) }];
    const prompt = chatBlockKeys(messages);
    const next = chatBlockKeys([...messages, { role: "assistant", content: randomText(alphabets.mixed!, 2000) }]);
    assert.deepEqual(next.slice(0, prompt.length), prompt);
    assert.equal(prompt.length, Math.floor(chatSerialisedLength(messages) / 64));
  });
});

describe("chatSerialisedLength", () => {
  it("counts exactly the characters chatBlockKeys cuts into blocks", () => {
    for (const extra of [0, 1, 63, 64, 65]) {
      const messages = [
        { role: "system", content: SYSTEM },
        {
          role: "user",
          content: [
            { type: "text", text: longText(130 + extra) },
            { type: "image_url", image_url: { url: "https://x/y.png" } },
            { type: "input_audio", input_audio: { data: "UklGRiQ=", format: "wav" } },
          ],
        },
        { role: "assistant", name: "bot", content: null, tool_calls: [{ id: "c1", type: "function", function: { name: "f", arguments: '{"q":1}' } }] },
        { role: "tool", tool_call_id: "c1", content: "ok" },
      ];
      const length = chatSerialisedLength(messages);
      assert.equal(chatBlockKeys(messages).length, Math.floor(length / 64), `extra ${extra}`);
      assert.equal(chatBlockKeys(messages, 1).length, length);
    }
  });
});

describe("non-text parts in the token estimate", () => {
  const image = `data:image/jpeg;base64,${"/9j/4AAQSkZJRgABAQ".repeat(34_000)}`; // ~612 KB
  const withImage = (url: string) => [
    {
      role: "user",
      content: [
        { type: "text", text: "What is in this picture?" },
        { type: "image_url", image_url: { url } },
      ],
    },
  ];

  it("counts an image, however large its data URL, as NON_TEXT_PART_CHARS", () => {
    const text = chatSerialisedLength([{ role: "user", content: "What is in this picture?" }]);
    assert.equal(chatSerialisedLength(withImage(image)), text + NON_TEXT_PART_CHARS);
    assert.equal(chatSerialisedLength(withImage("https://x/y.png")), text + NON_TEXT_PART_CHARS);
    const audio = [{ role: "user", content: [{ type: "input_audio", input_audio: { data: "A".repeat(400_000), format: "wav" } }] }];
    assert.equal(chatSerialisedLength(audio), chatSerialisedLength([{ role: "user", content: "" }]) + NON_TEXT_PART_CHARS);
  });

  it("keys images by their content, as many blocks as the estimate counts", () => {
    const other = `data:image/jpeg;base64,${"/9j/4AAQSkZJRgABAg".repeat(34_000)}`;
    const keys = chatBlockKeys(withImage(image));
    assert.equal(keys.length, Math.floor(chatSerialisedLength(withImage(image)) / 64));
    assert.notEqual(keys.at(-1), chatBlockKeys(withImage(other)).at(-1));
    assert.deepEqual(keys, chatBlockKeys(withImage(image.slice(0))));
  });
});

describe("tool definitions in the token estimate and the keys", () => {
  // What vLLM/SGLang hand the chat template as `tools` (rendered into the prompt, counted in prompt_tokens).
  const tool = (name: string, path = "workspace-relative path") => ({
    type: "function",
    function: {
      name,
      description: "Reads a file of the workspace and returns its content with line numbers.",
      parameters: { type: "object", properties: { path: { type: "string", description: path } }, required: ["path"] },
    },
  });
  const tools = [tool("read_file"), tool("list_dir")];
  const messages = [
    { role: "system", content: SYSTEM },
    { role: "user", content: longText(150) },
  ];

  it("counts the tools, as many characters as their canonical JSON", () => {
    const json = JSON.stringify(tools).length;
    const counted = chatSerialisedLength(messages, { tools }) - chatSerialisedLength(messages);
    // The piece is ␝tools: + canonical JSON + ␞ (canonical JSON only reorders keys: same length).
    assert.equal(counted, json + "tools:".length + 2);
    assert.equal(chatSerialisedLength(messages, { tools: [] }), chatSerialisedLength(messages), "an empty list renders nothing");
  });

  it("keys exactly the characters it counts, and keys differ by tool set", () => {
    for (const extra of [0, 17, 40, 63]) {
      const chat = [...messages, { role: "user", content: longText(extra) }];
      const length = chatSerialisedLength(chat, { tools });
      assert.equal(chatBlockKeys(chat, 64, { tools }).length, Math.floor(length / 64), `extra ${extra}`);
      assert.equal(chatBlockKeys(chat, 1, { tools }).length, length);
    }
    const keys = chatBlockKeys(messages, 64, { tools });
    assert.notEqual(keys.at(-1), chatBlockKeys(messages, 64, { tools: [tool("read_file"), tool("list_dir", "a path")] }).at(-1));
    assert.notDeepEqual(keys.slice(0, 3), chatBlockKeys(messages).slice(0, 3));
    // The same tools written with their JSON fields in another order are the same prompt.
    const reordered = tools.map((t) => ({
      function: { parameters: t.function.parameters, description: t.function.description, name: t.function.name },
      type: t.type,
    }));
    assert.deepEqual(chatBlockKeys(messages, 64, { tools: reordered }), keys);
  });

  it("continues the next turn from the keyer state: equal to keying the longer chat with its tools", () => {
    const { keys, state } = chatBlockKeysWithState(messages, 64, { tools });
    const reply = { role: "assistant", content: longText(300, 3) };
    const more = continueChatBlockKeys(state, [reply]).keys;
    assert.ok(more.length > 0);
    assert.deepEqual([...keys, ...more], chatBlockKeys([...messages, reply], 64, { tools }));
  });

  it("refuses tools that are not an array, naming the field, and counts them as nothing", () => {
    assert.throws(
      () => chatBlockKeys(messages, 64, { tools: { type: "function" } }),
      (e: unknown) => e instanceof RoutingInputError && e.field === "tools",
    );
    assert.equal(chatSerialisedLength(messages, { tools: "x" }), chatSerialisedLength(messages));
  });
});

describe("traceBlockKeys", () => {
  it("chains Mooncake integer ids, pinned", () => {
    assert.deepEqual(traceBlockKeys([1, 2, 3]), [4183153550382953, 4960154841502690, 6318824399369459]);
    const a = traceBlockKeys([1, 2, 3]);
    const b = traceBlockKeys([9, 2, 3]);
    assert.notEqual(a[1], b[1], "ids behind a different root must not collide");
  });

  it("chains ART-Chat hex ids, case-insensitively, pinned", () => {
    assert.deepEqual(traceBlockKeys(["ab12", "cd"]), [4170758431722849, 5410155829586325]);
    assert.deepEqual(traceBlockKeys(["AB12", "CD"]), traceBlockKeys(["ab12", "cd"]));
  });

  it("keeps integer and string ids apart", () => {
    assert.notDeepEqual(traceBlockKeys([5]), traceBlockKeys(["5"]));
  });

  it("is prefix-stable: a longer conversation extends the keys of a shorter one", () => {
    const ids = Array.from({ length: 40 }, (_, i) => i * 3 + 11);
    assert.deepEqual(traceBlockKeys(ids).slice(0, 25), traceBlockKeys(ids.slice(0, 25)));
  });

  it("rejects unusable ids", () => {
    assert.throws(() => traceBlockKeys([1, -2]), /hashIds\[1\]/);
    assert.throws(() => traceBlockKeys([1.5]), /hashIds\[0\]/);
    assert.throws(() => traceBlockKeys([Number.NaN]), RoutingInputError);
    assert.throws(() => traceBlockKeys([""]), /hashIds\[0\]/);
  });
});

describe("sessionKeyFromBlocks", () => {
  it("is the chained key of the N-th block, so it hashes the first N blocks", () => {
    const keys = traceBlockKeys([10, 20, 30]);
    assert.equal(sessionKeyFromBlocks(keys, 2), keys[1]!.toString(36));
    assert.equal(sessionKeyFromBlocks(keys, 99), keys[2]!.toString(36));
    assert.equal(sessionKeyFromBlocks([], 2), "");
    // Two requests sharing the first block but not the second get different 2-block keys.
    assert.notEqual(sessionKeyFromBlocks(traceBlockKeys([10, 21]), 2), sessionKeyFromBlocks(keys, 2));
    assert.throws(() => sessionKeyFromBlocks(keys, 0), /nBlocks/);
  });
});

describe("incremental keying (continue from a keyer state)", () => {
  const alphabets = [
    ["a", "b", " ", "z", "\n", "7"],
    ["a", " ", "é", "ß", "日", "本", "😀", "’"],
    ["a", "😀", "\ud800", "\udc00", "日"],
  ];
  const rng = createRng(23);
  function randomText(alphabet: string[], length: number): string {
    let out = "";
    while (out.length < length) out += alphabet[Math.floor(rng.next() * alphabet.length)];
    return out.slice(0, length);
  }
  function randomContent(alphabet: string[]): unknown {
    const pick = rng.next();
    const length = Math.floor(rng.next() * (rng.next() < 0.3 ? 3000 : 200));
    if (pick < 0.6) return randomText(alphabet, length);
    if (pick < 0.7) return null;
    const parts: unknown[] = [];
    for (let p = Math.floor(rng.next() * 4); p >= 0; p--) {
      const kind = rng.next();
      parts.push(
        kind < 0.8
          ? { type: "text", text: randomText(alphabet, Math.floor(rng.next() * 150)) }
          : kind < 0.9
            ? { type: "image_url", image_url: { url: randomText(alphabet, 40) } }
            : { type: "input_audio", input_audio: { data: randomText(alphabet, 40), format: "wav" } },
      );
    }
    return parts;
  }

  it("continueChatBlockKeys gives exactly chatBlockKeys of the extended chat, over random inputs", () => {
    for (let round = 0; round < 400; round++) {
      const alphabet = alphabets[round % alphabets.length]!;
      const blockChars = [64, 64, 7, 1, 130][round % 5]!;
      const messages = Array.from({ length: 1 + Math.floor(rng.next() * 4) }, (_, i) => ({
        role: i === 0 ? "system" : "user",
        content: randomContent(alphabet),
        ...(rng.next() < 0.2 ? { name: randomText(alphabet, 5), tool_calls: [{ id: "c", function: { name: "f", arguments: randomText(alphabet, 90) } }] } : {}),
      }));
      const reply = { role: "assistant", content: randomText(alphabet, Math.floor(rng.next() * (rng.next() < 0.5 ? 70 : 2000))) };
      const first = chatBlockKeysWithState(messages, blockChars);
      assert.deepEqual(first.keys, chatBlockKeys(messages, blockChars));
      const next = continueChatBlockKeys(first.state, [reply]);
      const full = chatBlockKeys([...messages, reply], blockChars);
      assert.deepEqual([...first.keys, ...next.keys], full, `round ${round} B=${blockChars}`);
      assert.equal(next.state.blocks, full.length);
      // States chain: a third turn continues from the second.
      const user = { role: "user", content: randomContent(alphabet) };
      const third = continueChatBlockKeys(next.state, [user]);
      assert.deepEqual([...full, ...third.keys], chatBlockKeys([...messages, reply, user], blockChars), `round ${round} third turn`);
    }
  });

  it("continuePromptBlockKeys gives exactly promptBlockKeys of prompt + appended text", () => {
    for (let round = 0; round < 300; round++) {
      // Surrogate halves joined across prompt and reply are the documented exception: no lone ones here.
      const alphabet = alphabets[round % 2]!;
      const blockChars = [64, 7, 1, 130][round % 4]!;
      const prompt = randomText(alphabet, Math.floor(rng.next() * 3000));
      const appended = randomText(alphabet, Math.floor(rng.next() * 500));
      const first = promptBlockKeysWithState(prompt, blockChars);
      const next = continuePromptBlockKeys(first.state, appended);
      assert.deepEqual([...first.keys, ...next.keys], promptBlockKeys(prompt + appended, blockChars), `round ${round} B=${blockChars}`);
    }
  });

  it("rejects a state of the wrong kind and malformed appended messages", () => {
    const prompt = promptBlockKeysWithState("x".repeat(100));
    assert.throws(() => continueChatBlockKeys(prompt.state, [{ role: "assistant", content: "hi" }]), RoutingInputError);
    const chat = chatBlockKeysWithState([{ role: "user", content: "hello" }]);
    assert.throws(() => continueChatBlockKeys(chat.state, [{ role: 5 as unknown as string, content: "hi" }]), /messages\[1\]\.role/);
  });
});
