// A stream with n choices decodes them side by side (vLLM and SGLang batch the n sequences), and its
// usage.completion_tokens is the sum over the choices. The LB learns a replica's decode ms/token from
// streams and uses it for the first-byte deadline of non-streamed requests (max_tokens × decode
// ms/token): it must learn the time per token of one sequence, not of the sum.
import { strict as assert } from "node:assert";
import { after, before, test } from "node:test";
import type { RunningProxy } from "../src/index";
import { chatBody, lbConfig, post, startLb } from "./helpers";
import { startRecordingEngine } from "./recording-engine";

const STEPS = 10;
let engine: Awaited<ReturnType<typeof startRecordingEngine>>;
let lb: RunningProxy;

before(async () => {
  engine = await startRecordingEngine((seen, res) => {
    const n = (JSON.parse(seen.body) as { n?: number }).n ?? 1;
    res.writeHead(200, { "content-type": "text/event-stream" });
    let step = 0;
    // One chunk per choice per decode step, steps a timer apart (so that decoding takes some time).
    const tick = (): void => {
      for (let i = 0; i < n; i++) res.write(`data: ${JSON.stringify({ choices: [{ index: i, delta: { content: "tok " } }] })}\n\n`);
      if (++step < STEPS) return void setTimeout(tick, 2);
      res.write(`data: ${JSON.stringify({ choices: [], usage: { prompt_tokens: 20, completion_tokens: n * STEPS, total_tokens: 20 + n * STEPS } })}\n\n`);
      res.end("data: [DONE]\n\n");
    };
    tick();
  });
  lb = await startLb(lbConfig("lb-us", "us-ashburn", [engine]));
});
after(async () => {
  await lb?.close();
  await engine?.close();
});

test("a stream of n=8 choices teaches the decode time per token of one choice", async () => {
  const core = lb.balancer.core;
  // The stream's decode time as the LB measured it, taken on its way to the core.
  const decodeMs: number[] = [];
  const decodeObserved = core.decodeObserved.bind(core);
  core.decodeObserved = (ticket, sample, ms) => {
    decodeMs.push(ms);
    decodeObserved(ticket, sample, ms);
  };
  const result = await post(`${lb.url}/v1/chat/completions`, chatBody("eight", { stream: true, n: 8 }));
  assert.equal(result.status, 200);
  assert.equal(decodeMs.length, 1);
  const replica = core.replicas.get("e1");
  // The first sample is the rate: 8 × 10 tokens in that time is 10 decode steps, not 80.
  assert.ok((decodeMs[0] ?? 0) > 0);
  assert.equal(replica?.firstByte.decodeMsPerToken, (decodeMs[0] ?? 0) / STEPS);
});
