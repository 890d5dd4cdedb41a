// vLLM's `documents`, which RAG chat templates render into the prompt (Granite after the system turn,
// Command R after the conversation): counted and keyed, so that two requests differing only in their
// documents share keys no further than their system prompt, and the next turn still continues them.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { RoutingInputError } from "../errors";
import { chatBlockKeys, chatBlockKeysWithState, chatSerialisedLength, continueChatBlockKeys, PART_SEPARATOR } from "./index";

const system = { role: "system", content: "You answer from the documents only, and cite them by id. ".repeat(6) };
const question = { role: "user", content: "What does the warranty cover, and for how long after the purchase date?" };
// Fields in sorted order, so that JSON.stringify writes them as the keys' canonical JSON does.
const docs = (topic: string) => [
  { doc_id: "1", text: `The ${topic} warranty covers defects in materials and workmanship. `.repeat(4), title: "Warranty" },
  { doc_id: "2", text: "Returns are accepted within thirty days of delivery with a receipt. ".repeat(3), title: "Returns" },
];

/** How many leading items two lists (keys, or characters) share. */
function shared<T>(a: ArrayLike<T>, b: ArrayLike<T>): number {
  let n = 0;
  while (n < a.length && n < b.length && a[n] === b[n]) n++;
  return n;
}

describe("documents in the token estimate and the keys", () => {
  const messages = [system, question];
  const systemBlocks = Math.floor(chatSerialisedLength([system]) / 64);

  it("requests that differ only in their documents share keys no further than the system prompt", () => {
    const a = chatBlockKeys(messages, 64, { documents: docs("bicycle") });
    const b = chatBlockKeys(messages, 64, { documents: docs("kettle") });
    assert.ok(a.length > systemBlocks + 2);
    // The system message, then `␝documents:` and the documents' JSON as far as they agree ('[{"doc_id":"1","text":"The ').
    const sameChars =
      chatSerialisedLength([system]) + `${PART_SEPARATOR}documents:`.length + shared(JSON.stringify(docs("bicycle")), JSON.stringify(docs("kettle")));
    assert.equal(shared(a, b), Math.floor(sameChars / 64));
    assert.ok(shared(a, b) <= systemBlocks + 1);
    // Their shared system prompt is keyed as without documents: a RAG service's requests meet there.
    assert.deepEqual(a.slice(0, systemBlocks), chatBlockKeys([system]));
    // Without a system message the documents come first: no key is shared.
    assert.equal(shared(chatBlockKeys([question], 64, { documents: docs("bicycle") }), chatBlockKeys([question], 64, { documents: docs("kettle") })), 0);
  });

  it("counts the documents as their canonical JSON, keys what it counts, and renders an empty list as nothing", () => {
    const documents = docs("bicycle");
    const counted = chatSerialisedLength(messages, { documents }) - chatSerialisedLength(messages);
    assert.equal(counted, JSON.stringify(documents).length + "documents:".length + 2);
    assert.equal(chatBlockKeys(messages, 1, { documents }).length, chatSerialisedLength(messages, { documents }));
    assert.deepEqual(chatBlockKeys(messages, 64, { documents: [] }), chatBlockKeys(messages));
    assert.throws(
      () => chatBlockKeys(messages, 64, { documents: { text: "not a list" } }),
      (e: unknown) => e instanceof RoutingInputError && e.field === "documents",
    );
  });

  it("continues the next turn from the keyer state: equal to keying the longer chat with its documents and tools", () => {
    const extras = { documents: docs("bicycle"), tools: [{ type: "function", function: { name: "search", parameters: { type: "object" } } }] };
    const { keys, state } = chatBlockKeysWithState(messages, 64, extras);
    const reply = { role: "assistant", content: "It covers defects in materials and workmanship for two years. ".repeat(3) };
    const more = continueChatBlockKeys(state, [reply]).keys;
    assert.ok(more.length > 0);
    assert.deepEqual(keys.concat(more), chatBlockKeys([...messages, reply], 64, extras));
  });
});
