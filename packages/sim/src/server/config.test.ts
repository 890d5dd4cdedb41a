import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { DEMO_ENGINE_PARAMS, PAPER_ENGINE_PARAMS } from "../engine";
import { loadConfig } from "./config";

describe("meridian-engine config", () => {
  it("has defaults", () => {
    const config = loadConfig([], {});
    assert.equal(config.server.host, "127.0.0.1");
    assert.equal(config.server.port, 0);
    assert.equal(config.server.dialect, "sglang");
    assert.deepEqual(config.server.params, DEMO_ENGINE_PARAMS);
  });

  it("reads flags over env and parses JSON options", () => {
    const config = loadConfig(
      ["--port", "4101", "--id", "us-1", "--region", "us-ashburn", "--rtt-matrix", '{"us-ashburn":{"ap-seoul":464}}', "--preset", "paper", "--params", '{"prefillTokensPerSec":9000}'],
      { MERIDIAN_ENGINE_PORT: "5000", MERIDIAN_ENGINE_DIALECT: "vllm" },
    );
    assert.equal(config.server.port, 4101);
    assert.equal(config.server.dialect, "vllm");
    assert.deepEqual(config.server.rttMatrix, { "us-ashburn": { "ap-seoul": 464 } });
    assert.deepEqual(config.server.params, { ...PAPER_ENGINE_PARAMS, prefillTokensPerSec: 9000 });
  });

  it("rejects invalid settings with a message naming each flag", () => {
    assert.throws(() => loadConfig(["--dialect", "tgi", "--port=-1"], {}), /--port[\s\S]*--dialect/);
    assert.throws(() => loadConfig(["--rtt-matrix", "{nope"], {}), /--rtt-matrix/);
    assert.throws(() => loadConfig(["--params", '{"unknownKnob":1}'], {}), /--params/);
    assert.throws(() => loadConfig(["--bogus", "1"], {}), /bogus/);
  });
});
