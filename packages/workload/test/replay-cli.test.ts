// Cross-process: runs the meridian-replay bin against the SSE stub and checks its outputs.
import assert from "node:assert/strict";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { after, before, describe, it } from "node:test";
import { runCli } from "./run-cli";
import { startSseStub, type SseStub } from "./sse-stub";

const fixture = fileURLToPath(new URL("../fixtures/mooncake-conversation-first500.jsonl", import.meta.url));

describe("meridian-replay CLI", () => {
  let stub: SseStub;
  let dir: string;
  before(async () => {
    stub = await startSseStub({ deltas: 2, cachedTokens: 5 });
    dir = await mkdtemp(join(tmpdir(), "wl-cli-"));
  });
  after(async () => {
    await stub.close();
    await rm(dir, { recursive: true, force: true });
  });

  it("replays a trace window and prints the summary; writes JSONL and summary files", async () => {
    const out = join(dir, "results.jsonl");
    const summaryPath = join(dir, "summary.json");
    const entrypoints = JSON.stringify({ "us-ashburn": stub.url, "ap-seoul": stub.url });
    const { code, stdout, stderr } = await runCli([
      "--trace",
      fixture,
      "--entrypoints",
      entrypoints,
      "--time-scale",
      "0.001",
      "--max-requests",
      "25",
      "--concurrency",
      "4",
      "--max-output-tokens",
      "8",
      "--out",
      out,
      "--summary",
      summaryPath,
    ]);
    assert.equal(code, 0, stderr);
    const summary = JSON.parse(stdout) as { requests: number; ok: number; tokens: { cached: number }; byRegion: Record<string, unknown> };
    assert.equal(summary.requests, 25);
    assert.equal(summary.ok, 25);
    assert.equal(summary.tokens.cached, 25 * 5);
    assert.deepEqual(JSON.parse(await readFile(summaryPath, "utf8")), summary);
    assert.equal((await readFile(out, "utf8")).trim().split("\n").length, 25);
  });

  it("runs the multi-turn generator against a map URL for a bounded time", async () => {
    stub.map = { "eu-frankfurt": stub.url };
    const { code, stdout, stderr } = await runCli(["--generator", "multi-turn", "--rate", "40", "--duration-s", "0.5", "--entrypoints", `${stub.url}/map`]);
    assert.equal(code, 0, stderr);
    const summary = JSON.parse(stdout) as { requests: number; errors: number; byRegion: Record<string, unknown> };
    assert.ok(summary.requests > 3, `${summary.requests} requests`);
    assert.equal(summary.errors, 0);
    assert.deepEqual(Object.keys(summary.byRegion), ["eu-frankfurt"]);
  });

  it("exits 2 with a clear message on bad arguments or a missing trace", async () => {
    const [bad, missing] = await Promise.all([
      runCli(["--trace", fixture]),
      runCli(["--trace", join(dir, "nope.jsonl"), "--entrypoints", JSON.stringify({ a: stub.url })]),
    ]);
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /--entrypoints is required/);
    assert.equal(missing.code, 2);
    assert.match(missing.stderr, /trace file not found: .*nope\.jsonl/);
  });
});
