// The OpenAI request shape as the LB checks it: valid requests of every documented form pass, and
// each kind of mistake is a 400 naming its parameter with OpenAI's code.
import { strict as assert } from "node:assert";
import { test } from "node:test";
import { HttpError } from "./errors";
import { checkRequestShape } from "./openai-shape";

const user = { role: "user", content: "hi" };

function refusal(kind: "chat" | "completion", body: Record<string, unknown>): { param: string | null; code: string } {
  try {
    checkRequestShape(kind, body);
  } catch (error) {
    assert.ok(error instanceof HttpError && error.status === 400, String(error));
    return { param: error.param, code: error.code };
  }
  assert.fail(`accepted ${JSON.stringify(body)}`);
}

test("valid chat and completion requests pass, unknown fields included", () => {
  const valid: [kind: "chat" | "completion", body: Record<string, unknown>][] = [
    ["chat", { model: "m", messages: [user] }],
    [
      "chat",
      {
        messages: [
          { role: "system", content: "s" },
          user,
          { role: "assistant", content: null, tool_calls: [] },
          { role: "tool", content: "r", tool_call_id: "t" },
        ],
      },
    ],
    [
      "chat",
      {
        messages: [
          {
            role: "user",
            content: [
              { type: "text", text: "a" },
              { type: "image_url", image_url: { url: "data:," } },
            ],
          },
        ],
      },
    ],
    ["chat", { messages: [{ role: "developer", content: "d" }], n: 2, max_tokens: 5, max_completion_tokens: null, temperature: 0, top_p: 1, seed: -3 }],
    ["chat", { messages: [user], stream: true, stream_options: { include_usage: true }, stop: ["\n"], user: "u", top_k: 40, chat_template_kwargs: {} }],
    ["completion", { prompt: "once" }],
    ["completion", { prompt: ["a", "b"], stream: null, stop: "." }],
    // OpenAI's prompt is string | string[] | integer[] | integer[][] (lm-evaluation-harness sends ids).
    ["completion", { prompt: [15496, 995, 11] }],
    ["completion", { prompt: [[15496, 995], [11]] }],
    // Prompt scoring: no generated token, the prompt's logprobs (OpenAI's minimum is 0 here).
    ["completion", { prompt: "once", max_tokens: 0, echo: true, logprobs: 1 }],
    ["chat", { messages: [user], tools: [{ type: "function", function: { name: "f" } }], tool_choice: "auto" }],
  ];
  for (const [kind, body] of valid) assert.doesNotThrow(() => checkRequestShape(kind, body), JSON.stringify(body));
});

test("each mistake names its parameter, with OpenAI's code", () => {
  const cases: [kind: "chat" | "completion", body: Record<string, unknown>, param: string, code: string][] = [
    ["chat", { messages: [user], model: "" }, "model", "invalid_value"],
    ["chat", { messages: [user], model: 3 }, "model", "invalid_type"],
    ["chat", {}, "messages", "missing_required_parameter"],
    ["chat", { messages: [user, "hi"] }, "messages[1]", "invalid_type"],
    ["chat", { messages: [{ content: "x" }] }, "messages[0].role", "missing_required_parameter"],
    ["chat", { messages: [{ role: "robot", content: "x" }] }, "messages[0].role", "invalid_value"],
    ["chat", { messages: [{ role: "user", content: 42 }] }, "messages[0].content", "invalid_type"],
    ["chat", { messages: [{ role: "user", content: null }] }, "messages[0].content", "invalid_type"],
    ["chat", { messages: [{ role: "user", content: [] }] }, "messages[0].content", "empty_array"],
    ["chat", { messages: [{ role: "user", content: ["text"] }] }, "messages[0].content[0]", "invalid_type"],
    ["chat", { messages: [{ role: "user", content: [{ text: "x" }] }] }, "messages[0].content[0].type", "missing_required_parameter"],
    ["chat", { messages: [{ role: "user", content: [{ type: "text" }] }] }, "messages[0].content[0].text", "missing_required_parameter"],
    ["chat", { messages: [{ role: "user", content: "x", name: 1 }] }, "messages[0].name", "invalid_type"],
    ["chat", { messages: [user], max_completion_tokens: 0 }, "max_completion_tokens", "integer_below_min_value"],
    ["chat", { messages: [user], top_p: -0.5 }, "top_p", "decimal_below_min_value"],
    ["chat", { messages: [user], presence_penalty: "high" }, "presence_penalty", "invalid_type"],
    ["chat", { messages: [user], seed: 1.5 }, "seed", "invalid_type"],
    ["chat", { messages: [user], stop: [1] }, "stop", "invalid_type"],
    ["chat", { messages: [user], user: {} }, "user", "invalid_type"],
    ["chat", { messages: [user], stream_options: [] }, "stream_options", "invalid_type"],
    ["completion", {}, "prompt", "missing_required_parameter"],
    ["completion", { prompt: [] }, "prompt", "invalid_type"],
    ["completion", { prompt: [1, -2, 3] }, "prompt", "invalid_type"],
    ["completion", { prompt: [[1, 2], []] }, "prompt", "invalid_type"],
    ["completion", { prompt: [[1, 2], "text"] }, "prompt", "invalid_type"],
    ["completion", { prompt: "x", max_tokens: -1 }, "max_tokens", "integer_below_min_value"],
    ["chat", { messages: [user], max_tokens: 0 }, "max_tokens", "integer_below_min_value"],
    ["chat", { messages: [user], tools: { type: "function" } }, "tools", "invalid_type"],
  ];
  for (const [kind, body, param, code] of cases) assert.deepEqual(refusal(kind, body), { param, code }, JSON.stringify(body));
});

test("an unknown role is answered as OpenAI answers it", () => {
  try {
    checkRequestShape("chat", { messages: [{ role: "wizard", content: "x" }] });
    assert.fail("accepted");
  } catch (error) {
    assert.equal(
      (error as Error).message,
      "Invalid value: 'wizard'. Supported values are: 'system', 'assistant', 'user', 'function', 'tool', and 'developer'.",
    );
  }
});
