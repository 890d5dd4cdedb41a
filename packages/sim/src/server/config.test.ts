import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { DEMO_ENGINE_PARAMS, PAPER_ENGINE_PARAMS } from "../engine";
import { engineSetupWarnings, loadConfig } from "./config";
import { DEMO_MODEL, DEMO_RTT_MS } from "./demo-network";

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
      [
        "--port",
        "4101",
        "--id",
        "us-1",
        "--region",
        "us-ashburn",
        "--rtt-matrix",
        '{"us-ashburn":{"ap-seoul":464}}',
        "--preset",
        "paper",
        "--params",
        '{"prefillTokensPerSec":9000}',
      ],
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
    // The id and region go out in every response's headers: visible ASCII only (東京-1 crashed the
    // engine at its first answer).
    assert.throws(() => loadConfig(["--id", "東京-1"], {}), /--id/);
    assert.throws(() => loadConfig(["--region", "ap seoul"], {}), /--region/);
  });

  it("defaults to the demo fleet's model and network, so a hand-started engine joins the demo as one of its own", () => {
    const config = loadConfig(["--region", "eu-frankfurt"], {});
    assert.equal(config.server.model, DEMO_MODEL);
    assert.deepEqual(config.server.rttMatrix, DEMO_RTT_MS);
    assert.deepEqual(engineSetupWarnings(config.server), []);
  });

  it("warns when the engine's region gets no emulated delay, and only then", () => {
    const [warning] = engineSetupWarnings(loadConfig([], {}).server);
    assert.match(warning ?? "", /no RTT emulation for region "local": every LB will measure this engine at ~1 ms/);
    assert.match(warning ?? "", /--rtt-matrix/);
    assert.equal(engineSetupWarnings(loadConfig(["--region", "us-ashburn", "--rtt-matrix", "{}"], {}).server).length, 1, "emulation turned off");
    assert.deepEqual(
      engineSetupWarnings(loadConfig(["--region", "ap-seoul", "--rtt-matrix", '{"us-ashburn":{"ap-seoul":464}}'], {}).server),
      [],
      "the reverse entry counts",
    );
  });
});
