import { strict as assert } from "node:assert";
import { test } from "node:test";
import { embeddingsResponse, embeddingVector, EmbeddingsBody, embeddingPrompts } from "./embeddings";

test("vectors are deterministic unit vectors of the asked length; base64 carries the same float32s", () => {
  const a = embeddingVector("hello", 8);
  assert.deepEqual(a, embeddingVector("hello", 8));
  assert.notDeepEqual(a, embeddingVector("hello!", 8));
  assert.ok(Math.abs(a.reduce((sum, v) => sum + v * v, 0) - 1) < 1e-5);
  const body = EmbeddingsBody.parse({ input: ["hello", "world"], dimensions: 8, encoding_format: "base64" });
  const results = embeddingPrompts(body, 4).map((prompt) => ({ prompt, cachedTokens: 1 }));
  const response = embeddingsResponse(body, "m", results, true) as { data: { index: number; embedding: string }[]; usage: Record<string, unknown> };
  const decoded = Buffer.from(response.data[0]!.embedding, "base64");
  assert.deepEqual(new Float32Array(new Uint8Array(decoded).buffer), a);
  assert.deepEqual(
    response.data.map((d) => d.index),
    [0, 1],
  );
  assert.deepEqual(response.usage, { prompt_tokens: 4, total_tokens: 4, prompt_tokens_details: { cached_tokens: 2 } });
});

test("token-id and empty inputs are refused by the schema", () => {
  for (const input of [[1, 2], "", []]) assert.equal(EmbeddingsBody.safeParse({ input }).success, false, JSON.stringify(input));
});
