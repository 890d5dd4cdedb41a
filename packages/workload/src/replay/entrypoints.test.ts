import assert from "node:assert/strict";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { startSseStub, type SseStub } from "../../test/sse-stub";
import { chatCompletionsUrl, createEntrypointResolver, entrypointsFromFlag, parseEntrypointMap } from "./entrypoints";

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
    assert.throws(() => parseEntrypointMap({ "us-ashburn": "not a url" }), {
      message: 'region "us-ashburn": expected an http(s) URL or {"url": "http..."}, got "not a url"',
    });
    assert.throws(() => parseEntrypointMap({ entrypoints: { a: "localhost:4201" } }), { message: /^region "a": .*got "localhost:4201"$/ });
    assert.throws(() => parseEntrypointMap({ a: { url: 42 } }), { message: /^region "a": .*got url number 42$/ });
    assert.throws(() => parseEntrypointMap(["http://h:1"]), { message: "expected a JSON object of region → URL, got an array" });
  });

  it("reads --entrypoints as inline JSON, a JSON file or a URL; a bad value is one line naming the flag", async () => {
    const dir = await mkdtemp(join(tmpdir(), "wl-ep-"));
    try {
      assert.deepEqual(await entrypointsFromFlag(' {"a": "http://h:1"} '), { a: "http://h:1" });
      assert.equal(await entrypointsFromFlag("http://console:3000/api/entrypoints"), "http://console:3000/api/entrypoints");
      const good = join(dir, "good.json");
      await writeFile(good, '{\n  "entrypoints": {"b": {"url": "https://h:2"}}\n}\n');
      assert.deepEqual(await entrypointsFromFlag(good), { b: "https://h:2" });

      const bad = join(dir, "bad.json");
      await writeFile(bad, '{\n  "a": "http://h:1",\n}\n');
      const cases: [string, RegExp][] = [
        ['{"a": http://h:1}', /^--entrypoints: invalid JSON: /],
        ['{"a": "not a url"}', /^--entrypoints: region "a": expected an http\(s\) URL/],
        ["{}", /^--entrypoints: the map has no regions$/],
        [bad, /^--entrypoints \S+bad\.json: invalid JSON: /],
        [join(dir, "missing.json"), /^--entrypoints: no such file ".*missing\.json" \(expected inline JSON, a URL or a JSON file\)$/],
      ];
      for (const [value, expected] of cases) {
        await assert.rejects(entrypointsFromFlag(value), (error: Error) => {
          assert.match(error.message, expected);
          assert.doesNotMatch(error.message, /\n/, "one line");
          return true;
        });
      }
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
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

  it("a refresh asked for while a fetch is in flight reads the map as it is after the call", async () => {
    const console = await startSseStub();
    stubs.push(console);
    console.map = { a: "http://127.0.0.1:1" };
    const resolver = createEntrypointResolver({ source: `${console.url}/map`, refreshMs: 60_000 });
    try {
      await resolver.ready();
      // A fetch in flight that read the good map, its answer held back.
      let release = () => {};
      console.mapGate = new Promise<void>((resolve) => (release = resolve));
      const hits = console.mapHits;
      const earlier = resolver.refresh();
      for (let waited = 0; console.mapHits === hits && waited < 5000; waited += 5) await new Promise((resolve) => setTimeout(resolve, 5));
      // The console changes its map; a refresh asked for now must read it, not the answer in flight.
      console.map = { a: 42 };
      console.mapGate = null;
      const later = resolver.refresh();
      release();
      await earlier;
      await assert.rejects(later, /entrypoint map/);
      assert.equal(resolver.get("a"), "http://127.0.0.1:1", "a bad map does not replace a good one");
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
