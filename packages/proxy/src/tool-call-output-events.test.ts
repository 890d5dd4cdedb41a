// An engine that reports no usage: the LB counts the stream's output events as its output tokens
// (the telemetry's outputTokens, the replica's decode rate). An agent's turn of tool calls alone, a
// legacy function call or a reasoning model's thinking generate tokens as text does, and count so.
import { strict as assert } from "node:assert";
import { test } from "node:test";
import { responseFacts } from "./completion";
import { SseObserver } from "./sse";
import type { ExchangeJob, UpstreamExchange } from "./upstream";

const event = (delta: unknown, finish: string | null = null): string =>
  `data: ${JSON.stringify({ choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;

/** The observer and the facts the LB reads off a finished stream without usage. */
function observe(events: readonly string[]) {
  const observer = new SseObserver({ stripUsage: false, onFirstContent: () => undefined });
  for (const chunk of events) observer.push(Buffer.from(chunk));
  observer.end();
  const facts = responseFacts({ observer, firstContentAt: null } as unknown as UpstreamExchange<ExchangeJob>);
  return { facts, sample: observer.decodeSample() };
}

/** A stream opening with the role, `generated` events, then the finish and [DONE]: none of the three count. */
function stream(generated: readonly unknown[], finish: string): string[] {
  return [event({ role: "assistant", content: "" }), ...generated.map((delta) => event(delta)), event({}, finish), "data: [DONE]\n\n"];
}

test("a reply of tool calls alone, without usage, counts its tool-call events as output tokens", () => {
  const args = ['{"pat', 'tern":', '"retry', 'Budget"}'];
  const generated = [
    { tool_calls: [{ index: 0, id: "call_1", type: "function", function: { name: "grep", arguments: "" } }] },
    ...args.map((piece) => ({ tool_calls: [{ index: 0, id: null, function: { arguments: piece } }] })),
  ];
  const { facts, sample } = observe(stream(generated, "tool_calls"));
  assert.equal(facts.outputEvents, 5);
  assert.deepEqual(sample, { outputTokens: 5, sequences: 1 });
});

test("a legacy function call and reasoning count as output; role, empty and finish events do not", () => {
  const generated = [
    { reasoning_content: "The user wants" },
    { reasoning: " the weather." },
    { content: "" },
    { function_call: { name: "get_weather", arguments: "" } },
    { function_call: { arguments: '{"city":"Oslo"}' } },
    { tool_calls: [] },
  ];
  assert.equal(observe(stream(generated, "function_call")).facts.outputEvents, 4);
});
