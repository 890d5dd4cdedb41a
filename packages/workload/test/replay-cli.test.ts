// Cross-process: runs the meridian-replay bin against the SSE stub and checks its outputs.
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
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

  it("exits 2 with one line, before sending anything, when --out or --summary cannot be written", async () => {
    const entrypoints = JSON.stringify({ r: stub.url });
    const before = stub.received.length;
    const [out, summary] = await Promise.all(
      ["--out", "--summary"].map((flag) => runCli(["--trace", fixture, "--max-requests", "3", "--entrypoints", entrypoints, flag, join(dir, "missing", "x")])),
    );
    assert.equal(out!.code, 2, out!.stderr);
    assert.match(out!.stderr, /^meridian-replay: --out: cannot write .*missing\/x: ENOENT[^\n]*\n$/);
    assert.equal(summary!.code, 2, summary!.stderr);
    assert.match(summary!.stderr, /^meridian-replay: --summary: cannot write .*missing\/x: ENOENT[^\n]*\n$/);
    assert.equal(stub.received.length, before, "nothing sent");
  });

  it("still prints the summary when --out fails mid-run (a full disk), then exits 2 naming the flag", { skip: !existsSync("/dev/full") }, async () => {
    const r = await runCli([
      "--trace",
      fixture,
      "--max-requests",
      "3",
      "--time-scale",
      "0.001",
      "--entrypoints",
      JSON.stringify({ r: stub.url }),
      "--out",
      "/dev/full",
    ]);
    assert.equal(r.code, 2, r.stderr);
    assert.equal((JSON.parse(r.stdout) as { requests: number }).requests, 3);
    assert.match(r.stderr, /^meridian-replay: --out: cannot write \/dev\/full: ENOSPC[^\n]*\n$/);
  });

  it("exits 2 naming the flag for a flag of the other mode or a delay no timer holds", async () => {
    const entrypoints = JSON.stringify({ r: stub.url });
    const [rate, timeout] = await Promise.all([
      runCli(["--trace", fixture, "--entrypoints", entrypoints, "--rate", "5"]),
      runCli(["--trace", fixture, "--entrypoints", entrypoints, "--timeout-s", "3000000"]),
    ]);
    assert.equal(rate.code, 2);
    assert.match(rate.stderr, /^meridian-replay: --rate applies to --generator multi-turn only\n/);
    assert.equal(timeout.code, 2);
    assert.match(timeout.stderr, /^meridian-replay: --timeout-s must be at most 2147483\.647 s/);
  });
});
