// Through the LB: an agent's reply that is tool calls alone is learned as the next turn the client
// will send (conversation + the assistant message carrying the calls), streamed or not, so the
// index's routes for the replica go past the prompt into that message. Before, a reply without text
// taught only the prompt. Fake engine and LB on loopback, port 0; closed by handle.
import { strict as assert } from "node:assert";
import { after, before, test } from "node:test";
import { chatSerialisedLength, DEFAULT_BLOCK_CHARS } from "@meridian/routing";
import { parseInference } from "../src/request";
import { chatBody, post, startHeldReplicaLb, waitFor } from "./helpers";

let fleet: Awaited<ReturnType<typeof startHeldReplicaLb>>;

before(async () => {
  fleet = await startHeldReplicaLb("us-agent");
});
after(async () => {
  await fleet?.close();
});

const routes = () => fleet.routes();
const tools = [{ type: "function", function: { name: "grep", description: "Searches the repository for a pattern.", parameters: { type: "object" } } }];
const CALL = {
  id: "call_7",
  type: "function",
  function: { name: "grep", arguments: JSON.stringify({ pattern: "retryBudget", path: "packages/proxy/src/upstream.ts" }) },
};
const event = (delta: unknown): string => `data: ${JSON.stringify({ choices: [{ index: 0, delta }] })}\n\n`;

/** Blocks the client's next turn shares with the engine's cache: the prompt and the assistant message. */
function nextTurnDepth(body: Record<string, unknown>): number {
  const prompt = parseInference("chat", Buffer.from(JSON.stringify(body)), undefined, 16);
  const assistant = { role: "assistant", content: null, tool_calls: [CALL] };
  return Math.floor((prompt.promptChars + chatSerialisedLength([assistant])) / DEFAULT_BLOCK_CHARS);
}

test("a streamed reply of tool calls alone is learned as the next turn", async () => {
  const before = await routes();
  const body = chatBody("Where is the retry budget configured? Search the proxy first.", { stream: true, tools });
  const reply = post(`${fleet.lb.url}/v1/chat/completions`, body);
  const held = await waitFor("the engine received the request", () => fleet.engine.held[0]);
  held.res.writeHead(200, { "content-type": "text/event-stream" });
  const args = CALL.function.arguments;
  held.res.write(
    event({ role: "assistant", content: null, tool_calls: [{ index: 0, id: CALL.id, type: "function", function: { name: "grep", arguments: "" } }] }),
  );
  for (let i = 0; i < args.length; i += 9) held.res.write(event({ tool_calls: [{ index: 0, function: { arguments: args.slice(i, i + 9) } }] }));
  held.res.end(`data: ${JSON.stringify({ choices: [{ index: 0, delta: {}, finish_reason: "tool_calls" }] })}\n\ndata: [DONE]\n\n`);
  assert.equal((await reply).status, 200);
  const depth = nextTurnDepth(body);
  assert.ok(depth > Math.floor(parseInference("chat", Buffer.from(JSON.stringify(body)), undefined, 16).promptChars / DEFAULT_BLOCK_CHARS));
  await waitFor(`the next turn learned (${depth} routes)`, async () => ((await routes()) === before + depth ? true : undefined));
});

test("a non-streamed reply of tool calls alone is learned as the next turn", async () => {
  const before = await routes();
  // Another agent (its system prompt and tools differ from the first block on), so its routes add up
  // beside the first one's.
  const otherTools = [{ type: "function", function: { name: "grep", description: "Finds a pattern in the files.", parameters: { type: "object" } } }];
  const body = chatBody("", {
    tools: otherTools,
    messages: [
      { role: "system", content: "Search the repository before you answer; quote the file you found. ".repeat(4) },
      { role: "user", content: "Which file sets the retry budget? Answer after searching for it." },
    ],
  });
  const reply = post(`${fleet.lb.url}/v1/chat/completions`, body);
  const held = await waitFor("the engine received the request", () => fleet.engine.held[1]);
  const message = { role: "assistant", content: null, tool_calls: [CALL] };
  held.res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ choices: [{ index: 0, message, finish_reason: "tool_calls" }] }));
  assert.equal((await reply).status, 200);
  const depth = nextTurnDepth(body);
  await waitFor(`the next turn learned (${depth} routes)`, async () => ((await routes()) === before + depth ? true : undefined));
});
