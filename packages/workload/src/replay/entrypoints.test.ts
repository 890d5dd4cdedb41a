import assert from "node:assert/strict";
import { after, describe, it } from "node:test";
import { startSseStub, type SseStub } from "../../test/sse-stub";
import { chatCompletionsUrl, createEntrypointResolver, parseEntrypointMap } from "./entrypoints";

const stubs: SseStub[] = [];
after(async () => {
  await Promise.all(stubs.map((s) => s.close()));
});

describe("entrypoint resolution", () => {
  it("accepts a flat map, a wrapped map and per-region objects; rejects non-URLs", () => {
    const flat = { "us-ashburn": "http://127.0.0.1:4201" };
    assert.deepEqual(parseEntrypointMap(flat), flat);
    assert.deepEqual(parseEntrypointMap({ entrypoints: flat }), flat);
    assert.deepEqual(parseEntrypointMap({ "us-ashburn": { url: "http://127.0.0.1:4201", lbId: "lb-1" } }), flat);
    assert.throws(() => parseEntrypointMap({ "us-ashburn": "not a url" }));
  });

  it("builds the chat completions URL with or without /v1", () => {
    assert.equal(chatCompletionsUrl("http://h:1"), "http://h:1/v1/chat/completions");
    assert.equal(chatCompletionsUrl("http://h:1/"), "http://h:1/v1/chat/completions");
    assert.equal(chatCompletionsUrl("http://h:1/v1"), "http://h:1/v1/chat/completions");
  });

  it("fetches a map URL with a bearer token, refreshes it, and keeps the last good map on failure", async () => {
    const console = await startSseStub();
    stubs.push(console);
    console.map = { a: "http://127.0.0.1:1" };
    const resolver = createEntrypointResolver({ source: `${console.url}/map`, token: "sekret", refreshMs: 30 });
    try {
      await resolver.ready();
      assert.equal(resolver.get("a"), "http://127.0.0.1:1");
      assert.deepEqual(resolver.regions(), ["a"]);
      assert.equal(console.mapHeaders?.authorization, "Bearer sekret");
      console.map = { a: "http://127.0.0.1:2", b: "http://127.0.0.1:3" };
      for (let waited = 0; resolver.get("b") === undefined && waited < 5000; waited += 20) {
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      assert.equal(resolver.get("a"), "http://127.0.0.1:2");
      assert.deepEqual(resolver.regions(), ["a", "b"]);
      console.map = { a: 42 };
      await assert.rejects(resolver.refresh(), /entrypoint map/);
      assert.equal(resolver.get("a"), "http://127.0.0.1:2", "a bad map does not replace a good one");
      assert.ok(resolver.lastError());
    } finally {
      resolver.close();
    }
  });

  it("fails ready() clearly when the map URL is unreachable", async () => {
    const resolver = createEntrypointResolver({ source: "http://127.0.0.1:1/map", fetchTimeoutMs: 2000 });
    try {
      await assert.rejects(resolver.ready(), /entrypoint map http:\/\/127\.0\.0\.1:1\/map/);
    } finally {
      resolver.close();
    }
  });
});
