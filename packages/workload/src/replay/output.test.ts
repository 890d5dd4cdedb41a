// The replay's output files: a path that cannot be opened fails before anything is sent; a write that
// fails mid-run (a full disk: /dev/full) does not crash the process, and the summary comes back.
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it, test } from "node:test";
import { rowsAtOnce, stubsClosedAfter } from "../../test/sse-stub";
import type { ReplayOutputError } from "./output";
import { runReplay } from "./run";

const stub = stubsClosedAfter();
const rows = rowsAtOnce(3);

/** What `run` rejects with (ReplayOutputError is checked by name: the old runner had none). */
async function rejection(run: Promise<unknown>): Promise<ReplayOutputError> {
  try {
    await run;
  } catch (error) {
    return error as ReplayOutputError;
  }
  return assert.fail("resolved");
}

describe("replay output files", () => {
  it("an outPath or summaryPath in a missing directory rejects before any request, naming the option", async () => {
    const s = await stub();
    for (const option of ["outPath", "summaryPath"] as const) {
      const error = await rejection(runReplay({ trace: rows, entrypoints: { r: s.url }, [option]: "/nonexistent-dir/x.json" }));
      assert.equal(error.name, "ReplayOutputError", String(error));
      assert.equal(error.option, option);
      assert.match(error.message, /^cannot write \/nonexistent-dir\/x\.json: ENOENT/);
      assert.equal(error.summary, undefined);
    }
    assert.equal(s.received.length, 0);
  });

  it("a write that fails mid-run ends the run normally and hands back its summary with the error", { skip: !existsSync("/dev/full") }, async () => {
    const s = await stub();
    for (const option of ["outPath", "summaryPath"] as const) {
      const error = await rejection(runReplay({ trace: rows, entrypoints: { r: s.url }, [option]: "/dev/full" }));
      assert.equal(error.name, "ReplayOutputError", String(error));
      assert.equal(error.option, option);
      assert.match(error.message, /ENOSPC/);
      assert.equal(error.summary?.requests, 3);
      assert.equal(error.summary?.ok, 3);
    }
  });
});

test("a replay that fails before it has a summary leaves the previous summary file as it was", async () => {
  const dir = mkdtempSync(join(tmpdir(), "wl-summary-kept-"));
  try {
    const summaryPath = join(dir, "summary.json");
    const previous = `${JSON.stringify({ requests: 500, ok: 500 }, null, 2)}\n`;
    writeFileSync(summaryPath, previous);
    const trace = join(dir, "bad.jsonl");
    writeFileSync(trace, '{"timestamp": 0, "input_length": 10, "output_length": 2, "hash_ids": [1]}\nnot json\n');
    // A bad trace row (and no entrypoint to reach): the run fails before any summary.
    await assert.rejects(runReplay({ trace, entrypoints: { r: "http://127.0.0.1:9" }, summaryPath }));
    assert.equal(readFileSync(summaryPath, "utf8"), previous);
    assert.deepEqual(readdirSync(dir).sort(), ["bad.jsonl", "summary.json"], "no temporary file left");
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
