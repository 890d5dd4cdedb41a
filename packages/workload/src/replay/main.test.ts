// The meridian-replay process as a user runs it: exit codes, stderr and the summary on stdout.
import assert from "node:assert/strict";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { runCli } from "../../test/run-cli";
import { startSseStub, type SseStub } from "../../test/sse-stub";

describe("meridian-replay main", () => {
  let stub: SseStub;
  let dir: string;
  let trace: string;
  before(async () => {
    stub = await startSseStub({ deltas: 1 });
    dir = await mkdtemp(join(tmpdir(), "wl-main-"));
    trace = join(dir, "trace.jsonl");
    const row = (t: number) => JSON.stringify({ timestamp: t, input_length: 300, output_length: 2, hash_ids: [0, 1] });
    await writeFile(trace, [row(0), JSON.stringify({ timestamp: 1, input_length: 300, output_length: 2, hash_ids: "x" }), row(2)].join("\n"));
  });
  after(async () => {
    await stub.close();
    await rm(dir, { recursive: true, force: true });
  });

  it("a bad --entrypoints value exits 2 with one line naming the flag and the problem", async () => {
    const [syntax, badUrl, missing] = await Promise.all([
      runCli(["--trace", trace, "--entrypoints", '{"us": http://127.0.0.1:1}']),
      runCli(["--trace", trace, "--entrypoints", '{"us": "127.0.0.1:4201"}']),
      runCli(["--trace", trace, "--entrypoints", join(dir, "nope.json")]),
    ]);
    for (const r of [syntax, badUrl, missing]) {
      assert.equal(r.code, 2, r.stderr);
      assert.equal(r.stdout, "");
      assert.equal(r.stderr.trimEnd().split("\n").length, 1, `one line: ${r.stderr}`);
    }
    assert.match(syntax.stderr, /^meridian-replay: --entrypoints: invalid JSON: /);
    assert.match(badUrl.stderr, /^meridian-replay: --entrypoints: region "us": expected an http\(s\) URL .*got "127\.0\.0\.1:4201"$/m);
    assert.match(missing.stderr, /^meridian-replay: --entrypoints: no such file ".*nope\.json"/);
  });

  it("--skip-invalid reports each skipped row on stderr and counts them in the summary", async () => {
    const { code, stdout, stderr } = await runCli([
      "--trace",
      trace,
      "--skip-invalid",
      "--time-scale",
      "0.001",
      "--entrypoints",
      JSON.stringify({ us: stub.url }),
    ]);
    assert.equal(code, 0, stderr);
    assert.equal(stderr, `skipped ${trace}:2: hash_ids: expected array\n`);
    const summary = JSON.parse(stdout) as { requests: number; ok: number; skippedInvalid: number; skippedTooLong: number };
    assert.equal(summary.requests, 2);
    assert.equal(summary.ok, 2);
    assert.equal(summary.skippedInvalid, 1);
    assert.equal(summary.skippedTooLong, 0);
  });
});
