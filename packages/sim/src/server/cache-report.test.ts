// An engine started without cache reports (vLLM without --enable-prompt-tokens-details, SGLang
// without --enable-cache-report) sends `prompt_tokens_details: null` on every endpoint that reports
// usage: an LB checking its `unreported` path must get no cached-token feedback from any of them.
import assert from "node:assert/strict";
import { after, before, it } from "node:test";
import { startEngineServer, type EngineServer } from "./index";

let server: EngineServer;
before(async () => {
  server = await startEngineServer({ id: "e1", region: "local", cacheReport: false });
});
after(() => server.close());

async function promptTokensDetails(path: string, body: unknown): Promise<unknown> {
  const res = await fetch(`${server.url}${path}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
  assert.equal(res.status, 200);
  return ((await res.json()) as { usage: { prompt_tokens_details: unknown } }).usage.prompt_tokens_details;
}

it("sends prompt_tokens_details: null on chat and text completions and on embeddings, even for a cached prompt", async () => {
  const text = "a document long enough to span several 64-character blocks of the prompt keyer, twice over.";
  for (let round = 0; round < 2; round++) {
    assert.equal(await promptTokensDetails("/v1/chat/completions", { messages: [{ role: "user", content: text }], max_tokens: 1 }), null, "chat");
    assert.equal(await promptTokensDetails("/v1/completions", { prompt: text, max_tokens: 1 }), null, "text completion");
    assert.equal(await promptTokensDetails("/v1/embeddings", { input: text }), null, "embeddings");
  }
});
