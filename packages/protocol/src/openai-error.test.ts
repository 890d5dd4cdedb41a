import { test } from "node:test";
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { OPENAI_ERROR_STATUS, OPENAI_ERROR_TYPES, openAiError, parseOpenAiError } from "./index";

// Real OpenAI error bodies (see test/fixtures/SOURCES.md).
const FIXTURES = fileURLToPath(new URL("../test/fixtures/", import.meta.url));

test("every recorded OpenAI error body in the fixtures parses", () => {
  const files = readdirSync(FIXTURES).filter((name) => name.startsWith("error-openai-") && name.endsWith(".json"));
  assert.ok(files.length >= 4, "fixtures present");
  for (const file of files) {
    const body: unknown = JSON.parse(readFileSync(join(FIXTURES, file), "utf8"));
    const parsed = parseOpenAiError(body);
    assert.equal(parsed.error.type, "invalid_request_error", file);
    assert.equal(typeof parsed.error.code, "string", file);
    assert.ok(parsed.error.message.length > 0, file);
  }
  const notFound = parseOpenAiError(JSON.parse(readFileSync(join(FIXTURES, "error-openai-model-not-found.json"), "utf8")));
  assert.equal(notFound.error.param, null);
  assert.equal(notFound.error.code, "model_not_found");
});

test("openAiError builds the same shape as the real bodies, keys included", () => {
  const real: unknown = JSON.parse(readFileSync(join(FIXTURES, "error-openai-model-not-found.json"), "utf8"));
  const ours = openAiError("The model `x` does not exist.", "invalid_request_error", "model_not_found");
  assert.deepEqual(Object.keys(ours.error).sort(), Object.keys((real as { error: object }).error).sort());
  assert.deepEqual(parseOpenAiError(JSON.parse(JSON.stringify(ours))), ours);
  assert.equal(openAiError("bad", "invalid_request_error", "empty_array", "messages").error.param, "messages");
});

test("vLLM-style numeric codes parse; a body without message is named", () => {
  const vllm = { object: "error", message: "bad", type: "BadRequestError", param: null, code: 400 };
  assert.equal(parseOpenAiError({ error: vllm }).error.code, 400);
  assert.throws(() => parseOpenAiError({ error: { type: "server_error", code: "x" } }), /openAiError\.error\.message/);
});

test("every canonical type has an HTTP status", () => {
  assert.ok(OPENAI_ERROR_TYPES.includes("not_found_error"));
  for (const type of OPENAI_ERROR_TYPES) assert.ok(OPENAI_ERROR_STATUS[type] >= 400);
});
