import assert from "node:assert/strict";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import { bundledTracePath } from "./bundled";
import { AUTO_FORMAT_MAX_PENDING_ROWS, loadTrace, parseTraceText, readTrace, TraceRowError } from "./reader";

const GOOD = (t: number, ids: unknown[]) => JSON.stringify({ timestamp: t, input_length: 600, output_length: 20, hash_ids: ids });

describe("trace reader", () => {
  it("reads the bundled Mooncake window as 512-token rows", async () => {
    const rows = await loadTrace(bundledTracePath());
    assert.equal(rows.length, 500);
    const first = rows[0]!;
    assert.equal(first.format, "mooncake");
    assert.equal(first.blockTokens, 512);
    assert.equal(first.index, 0);
    assert.equal(first.inputTokens, 6758);
    assert.deepEqual(first.hashIds.slice(0, 3), [0, 1, 2]);
    for (const row of rows) assert.equal(row.hashIds.length, Math.ceil(row.inputTokens / 512));
  });

  it("streams rows lazily and honours limit", async () => {
    const seen: number[] = [];
    for await (const row of readTrace(bundledTracePath(), { limit: 3 })) seen.push(row.index);
    assert.deepEqual(seen, [0, 1, 2]);
  });

  it("reports a bad row with its file and line number", async () => {
    const dir = await mkdtemp(join(tmpdir(), "wl-trace-"));
    const path = join(dir, "trace.jsonl");
    const lines = [GOOD(0, [0, 1]), "", GOOD(5, [0, 2]), JSON.stringify({ timestamp: 9, input_length: 1, output_length: 1, hash_ids: "x" })];
    await writeFile(path, lines.join("\n"));
    try {
      await assert.rejects(loadTrace(path), (error: unknown) => {
        assert.ok(error instanceof TraceRowError);
        assert.equal(error.line, 4);
        assert.equal(error.message, `${path}:4: hash_ids: expected array`);
        return true;
      });
      const skipped: TraceRowError[] = [];
      const rows = await loadTrace(path, { onInvalid: "skip", onSkip: (e) => skipped.push(e) });
      assert.equal(rows.length, 2);
      assert.deepEqual(
        skipped.map((e) => e.line),
        [4],
      );
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("reads a row with more hash ids than its input_length has blocks: what the ids beyond it mean is the consumer's", () => {
    // Exporters disagree by a block at the edges, and a simulator keys all of a row's ids; the
    // replay's synthesiser builds only the blocks input_length reaches (prompt/synth.ts).
    const line = JSON.stringify({ timestamp: 1, input_length: 10, output_length: 2, hash_ids: new Array(300_000).fill(0) });
    const [row] = parseTraceText(line, { source: "t.jsonl" });
    assert.equal(row?.hashIds.length, 300_000);
    assert.equal(row?.inputTokens, 10);
  });

  it("splits lines in memory as the streamed reader does: CRLF, LF or a lone CR", async () => {
    const dir = await mkdtemp(join(tmpdir(), "wl-trace-"));
    try {
      for (const eol of ["\r\n", "\n", "\r"]) {
        const text = [GOOD(0, [0, 1]), GOOD(1, [0, 2]), GOOD(2, [0, 3])].join(eol);
        const path = join(dir, "t.jsonl");
        await writeFile(path, text);
        const streamed = await loadTrace(path);
        assert.equal(streamed.length, 3, JSON.stringify(eol));
        assert.deepEqual(parseTraceText(text), streamed, JSON.stringify(eol));
      }
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("names missing fields, invalid JSON and wrong element types", () => {
    assert.throws(() => parseTraceText(`${GOOD(0, [0])}\n{"timestamp": 1, "input_length": 2, "output_length": 3}`, { source: "t.jsonl" }), {
      message: "t.jsonl:2: hash_ids: required (expected array)",
    });
    assert.throws(() => parseTraceText(`{not json`, { source: "t.jsonl" }), /^TraceRowError: t\.jsonl:1: invalid JSON/);
    assert.throws(() => parseTraceText(GOOD(0, [0, -1]), { source: "t.jsonl" }), /t\.jsonl:1: hash_ids\.1: /);
  });

  it("reads a file that starts with a UTF-8 byte-order mark like the same file without it", async () => {
    const dir = await mkdtemp(join(tmpdir(), "meridian-bom-"));
    try {
      const path = join(dir, "trace.jsonl");
      await writeFile(path, `\uFEFF${GOOD(0, [0, 1])}\n${GOOD(5, [0, 2])}\n`);
      assert.deepEqual(
        (await loadTrace(path)).map((r) => r.hashIds),
        [
          [0, 1],
          [0, 2],
        ],
      );
      assert.equal(parseTraceText(`\uFEFF${GOOD(0, [7])}`, { source: "t.jsonl" }).length, 1);
      // Only a file's first character is a byte-order mark; elsewhere U+FEFF is a bad row.
      assert.throws(() => parseTraceText(`${GOOD(0, [7])}\n\uFEFF${GOOD(1, [8])}`, { source: "t.jsonl" }), /t\.jsonl:2: invalid JSON/);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("fails clearly on a missing file", async () => {
    await assert.rejects(loadTrace("/nonexistent/dir/trace.jsonl"), { message: "trace file not found: /nonexistent/dir/trace.jsonl" });
  });

  it("reads ART-Chat rows with hex hash ids, 256-token blocks and an optional body", () => {
    const body = { model: "m", messages: [{ role: "user", content: "hi" }] };
    const text = [
      JSON.stringify({ timestamp: 0, input_length: 300, output_length: 5, hash_ids: ["a1f3", "09bc"], body }),
      JSON.stringify({ timestamp: 10, input_length: 200, output_length: 5, hash_ids: ["a1f3"] }),
    ].join("\n");
    const rows = parseTraceText(text);
    assert.equal(rows.length, 2);
    assert.equal(rows[0]!.format, "art-chat");
    assert.equal(rows[0]!.blockTokens, 256);
    assert.deepEqual(rows[0]!.hashIds, ["a1f3", "09bc"]);
    assert.deepEqual(rows[0]!.body, body);
    assert.equal(rows[1]!.body, undefined);
    assert.throws(
      () => parseTraceText(JSON.stringify({ timestamp: 0, input_length: 1, output_length: 1, hash_ids: ["zz"] }), { format: "art-chat", source: "a" }),
      {
        message: "a:1: hash_ids.0: expected hex string",
      },
    );
  });

  it("applies a window, re-basing and time scale while reading", () => {
    const text = [0, 1000, 2000, 3000, 4000].map((t, i) => GOOD(t, [0, i])).join("\n");
    const windowed = parseTraceText(text, { fromMs: 1000, toMs: 4000, timeScale: 2 });
    assert.deepEqual(
      windowed.map((r) => r.index),
      [1, 2, 3],
    );
    assert.deepEqual(
      windowed.map((r) => r.timestampMs),
      [0, 2000, 4000],
    );
    assert.deepEqual(
      windowed.map((r) => r.sourceTimestampMs),
      [1000, 2000, 3000],
    );
    const absolute = parseTraceText(text, { fromMs: 1000, toMs: 4000, rebase: false, timeScale: 0.5 });
    assert.deepEqual(
      absolute.map((r) => r.timestampMs),
      [500, 1000, 1500],
    );
  });

  it("auto-detects ART-Chat past a first row with empty hash_ids, streamed and in memory", async () => {
    const text = [
      JSON.stringify({ timestamp: 0, input_length: 10, output_length: 1, hash_ids: [] }),
      JSON.stringify({ timestamp: 1, input_length: 10, output_length: 1, hash_ids: [] }),
      JSON.stringify({ timestamp: 2, input_length: 300, output_length: 1, hash_ids: ["ab12", "cd34"] }),
      JSON.stringify({ timestamp: 3, input_length: 300, output_length: 1, hash_ids: [7, 8] }),
    ].join("\n");
    const dir = await mkdtemp(join(tmpdir(), "wl-trace-"));
    const path = join(dir, "art.jsonl");
    await writeFile(path, `${text}\n`);
    try {
      for (const rows of [parseTraceText(text), await loadTrace(path)]) {
        assert.deepEqual(
          rows.map((r) => [r.index, r.format, r.blockTokens, r.timestampMs]),
          [
            [0, "art-chat", 256, 0],
            [1, "art-chat", 256, 1],
            [2, "art-chat", 256, 2],
            [3, "art-chat", 256, 3],
          ],
        );
      }
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
    // A body is evidence too, even with no hash ids yet.
    const withBody = parseTraceText(
      [
        JSON.stringify({ timestamp: 0, input_length: 5, output_length: 1, hash_ids: [], body: { messages: [{ role: "user", content: "hi" }] } }),
        JSON.stringify({ timestamp: 1, input_length: 5, output_length: 1, hash_ids: ["ab"] }),
      ].join("\n"),
    );
    assert.deepEqual(
      withBody.map((r) => r.format),
      ["art-chat", "art-chat"],
    );
  });

  it("a skipped invalid row does not decide the format", () => {
    const skipped: number[] = [];
    const text = [
      "{not json",
      JSON.stringify({ hash_ids: [1, 2] }), // looks like Mooncake, but is not a valid row
      JSON.stringify({ timestamp: 0, input_length: 300, output_length: 1, hash_ids: ["ab12", "cd34"] }),
      JSON.stringify({ timestamp: 5, input_length: 300, output_length: 1, hash_ids: ["ab12"] }),
    ].join("\n");
    const rows = parseTraceText(text, { onInvalid: "skip", onSkip: (e) => skipped.push(e.line) });
    assert.deepEqual(skipped, [1, 2]);
    assert.deepEqual(
      rows.map((r) => [r.format, r.hashIds]),
      [
        ["art-chat", ["ab12", "cd34"]],
        ["art-chat", ["ab12"]],
      ],
    );
  });

  it("integer hash ids decide Mooncake; rows that never show a format read as Mooncake", () => {
    const ints = parseTraceText([GOOD(0, []), GOOD(1, [0, 1])].join("\n"));
    assert.deepEqual(
      ints.map((r) => [r.format, r.blockTokens]),
      [
        ["mooncake", 512],
        ["mooncake", 512],
      ],
    );
    assert.throws(() => parseTraceText([GOOD(0, []), GOOD(1, [0, 1]), GOOD(2, ["ab"])].join("\n"), { source: "t" }), /^TraceRowError: t:3: hash_ids\.0: /);
    const none = parseTraceText([GOOD(100, []), GOOD(150, [])].join("\n"), { fromMs: 100 });
    assert.deepEqual(
      none.map((r) => [r.index, r.format, r.timestampMs]),
      [
        [0, "mooncake", 0],
        [1, "mooncake", 50],
      ],
    );
    // Held rows are bounded: past the cap the file is read as Mooncake.
    const many = Array.from({ length: AUTO_FORMAT_MAX_PENDING_ROWS }, (_, i) => GOOD(i, []));
    assert.throws(() => parseTraceText([...many, GOOD(9999, ["ab"])].join("\n"), { source: "t" }), /hash_ids\.0: /);
  });

  it("limit 0 gives no rows, streamed or in memory; a limit counts emitted rows", async () => {
    const text = [GOOD(0, []), GOOD(1, ["ab"]), GOOD(2, ["cd"])].join("\n");
    const dir = await mkdtemp(join(tmpdir(), "wl-trace-"));
    const path = join(dir, "t.jsonl");
    await writeFile(path, text);
    try {
      for (const limit of [0, 1, 2]) {
        const streamed: number[] = [];
        for await (const row of readTrace(path, { limit })) streamed.push(row.index);
        const inMemory = parseTraceText(text, { limit }).map((r) => r.index);
        assert.deepEqual(streamed, inMemory, `limit ${limit}`);
        assert.equal(streamed.length, limit);
      }
      assert.deepEqual(
        (await loadTrace(path, { limit: 2 })).map((r) => r.format),
        ["art-chat", "art-chat"],
      );
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
