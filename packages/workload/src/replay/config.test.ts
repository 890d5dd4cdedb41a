import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { loadReplayConfig, UsageRequested } from "./config";

describe("meridian-replay config", () => {
  it("parses flags and environment into one validated config", () => {
    const config = loadReplayConfig(
      [
        "--trace",
        "t.jsonl",
        "--entrypoints",
        '{"a":"http://127.0.0.1:1"}',
        "--time-scale",
        "2",
        "--from-ms",
        "1000",
        "--to-ms",
        "5000",
        "--concurrency",
        "8",
        "--regions",
        "a=2,b=1",
        "--skip-invalid",
      ],
      { MERIDIAN_ENTRYPOINTS_TOKEN: "tok" },
    );
    assert.equal(config.trace, "t.jsonl");
    assert.equal(config.timeScale, 2);
    assert.equal(config.fromMs, 1000);
    assert.equal(config.toMs, 5000);
    assert.equal(config.concurrency, 8);
    assert.deepEqual(config.regions, { a: 2, b: 1 });
    assert.equal(config.skipInvalid, true);
    assert.equal(config.entrypointsToken, "tok");
    // The demo's model (DEMO_MODEL in @meridian/sim/demo-network): the demo LBs 404 any other.
    assert.equal(config.model, "meridian-demo");
    assert.equal(loadReplayConfig(["--generator", "multi-turn", "--entrypoints", "{}", "--model", "m"], {}).model, "m");
  });

  it("rejects bad or conflicting flags with a clear message", () => {
    assert.throws(() => loadReplayConfig(["--entrypoints", "{}"], {}), /exactly one of --trace FILE or --generator multi-turn/);
    assert.throws(() => loadReplayConfig(["--trace", "t", "--generator", "multi-turn", "--entrypoints", "{}"], {}), /exactly one/);
    assert.throws(() => loadReplayConfig(["--trace", "t"], {}), /--entrypoints is required/);
    assert.throws(() => loadReplayConfig(["--trace", "t", "--entrypoints", "{}", "--time-scale", "0"], {}), /timeScale/);
    assert.throws(() => loadReplayConfig(["--trace", "t", "--entrypoints", "{}", "--bogus"], {}), /bogus/);
    assert.throws(() => loadReplayConfig(["--help"], {}), UsageRequested);
    // An empty weight is an error, not 0 (the region silently got no traffic), and so is an empty name.
    const regions = (text: string) => loadReplayConfig(["--generator", "multi-turn", "--entrypoints", "{}", "--regions", text], {}).regions;
    assert.throws(() => regions("us=,eu=1"), /bad region weight "us="/);
    assert.throws(() => regions(" =1"), /bad region weight/);
  });

  it("refuses a flag of the other mode, naming the flag and the mode it applies to", () => {
    const load = (...args: string[]) => loadReplayConfig([...args, "--entrypoints", "{}"], {});
    assert.throws(() => load("--trace", "t", "--rate", "5"), /^Error: --rate applies to --generator multi-turn only$/);
    assert.throws(() => load("--trace", "t", "--sessions", "8"), /--sessions applies to --generator multi-turn only/);
    assert.throws(() => load("--trace", "t", "--seed", "3"), /--seed applies to --generator multi-turn only/);
    assert.throws(
      () => load("--generator", "multi-turn", "--from-ms", "1000", "--to-ms", "2000"),
      /^Error: --from-ms applies to --trace only; --to-ms applies to --trace only$/,
    );
    assert.throws(() => load("--generator", "multi-turn", "--skip-invalid"), /--skip-invalid applies to --trace only/);
    assert.throws(() => load("--generator", "multi-turn", "--max-input-tokens", "24000"), /--max-input-tokens applies to --trace only/);
    assert.throws(() => load("--generator", "multi-turn", "--format", "mooncake"), /--format applies to --trace only/);
    // Flags of both modes, and a mode's own flags, stay accepted.
    assert.equal(load("--generator", "multi-turn", "--rate", "5", "--seed", "2", "--time-scale", "2", "--duration-s", "3").rate, 5);
    assert.equal(load("--trace", "t", "--from-ms", "1", "--format", "art-chat", "--skip-invalid", "--max-input-tokens", "9").maxInputTokens, 9);
  });
});
