// Delays beyond what a Node timer holds (2^31-1 ms) are refused up front, by the CLI and the library,
// instead of firing after 1 ms (every request "timed out", the map fetched every millisecond).
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { rowsAtOnce, stubsClosedAfter } from "../../test/sse-stub";
import { loadReplayConfig } from "./config";
import { createEntrypointResolver } from "./entrypoints";
import { runReplay, startLoadGenerator } from "./run";

const stub = stubsClosedAfter();
const rows = rowsAtOnce(3);
const config = (...flags: string[]) => loadReplayConfig(["--trace", "t.jsonl", "--entrypoints", "{}", ...flags], {});

describe("timer limits", () => {
  it("--timeout-s and --refresh-ms above 2^31-1 ms are refused naming the flag; the limit itself is accepted", () => {
    assert.throws(() => config("--timeout-s", "3000000"), /^Error: --timeout-s must be at most 2147483.647 s \(2\^31-1 ms/);
    assert.throws(() => config("--refresh-ms", "3000000000"), /^Error: --refresh-ms must be at most 2147483647 ms/);
    assert.equal(config("--timeout-s", "2147483.647").timeoutS * 1000, 2_147_483_647);
    assert.equal(config("--refresh-ms", "2147483647").refreshMs, 2_147_483_647);
  });

  it("the library refuses such delays before sending anything", async () => {
    const s = await stub();
    for (const requestTimeoutMs of [3_000_000_000, 5_000_000_000]) {
      await assert.rejects(runReplay({ trace: rows, entrypoints: { r: s.url }, requestTimeoutMs }), /requestTimeoutMs must be > 0 and at most 2147483647 ms/);
    }
    await assert.rejects(runReplay({ trace: rows, entrypoints: { r: s.url }, refreshMs: 3_000_000_000 }), /refreshMs must be/);
    assert.throws(() => startLoadGenerator({ entrypoints: { r: s.url }, requestTimeoutMs: 3e9 }), /requestTimeoutMs must be/);
    assert.throws(() => createEntrypointResolver({ source: `${s.url}/map`, refreshMs: 3e9 }), /refreshMs must be/);
    assert.equal(s.received.length, 0);
    assert.equal(s.mapHits, 0);
  });
});
