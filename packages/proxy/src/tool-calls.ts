// The calls of a reply, as the client's next turn sends them back in its assistant message, so that
// an agent's turn that is calls alone (its text empty) is still learned as the next turn. Tool calls
// (`tool_calls: [{ id, type: "function", function: { name, arguments } }]`) or, in OpenAI's deprecated
// functions API, the one `function_call: { name, arguments }`. Read from a whole message or put
// together from a stream's `delta.tool_calls` or `delta.function_call` fragments the way OpenAI
// clients accumulate them: a tool call by `index`, its `id`, `type` and `function.name` from the
// fragment that carries them (the first), and for both kinds the `arguments` concatenated. Anything
// the LB cannot place (no index, an index past the next one, a field of the wrong type, a call without
// id or name, a tool type other than "function", a function call beside tool calls) makes the calls
// unknown: the reply is then not learned beyond the prompt, since a next turn keyed without them
// would be wrong.
import type { AssistantToolCall } from "@meridian/routing";
import { isRecord } from "./is-record";

/** Characters one call costs besides its id, name and arguments, as its JSON: what bounds a stream of
 * empty calls by the reply's character bound. */
const CALL_OVERHEAD_CHARS = JSON.stringify({ function: { arguments: "", name: "" }, id: "", type: "function" }).length;
const FUNCTION_CALL_OVERHEAD_CHARS = JSON.stringify({ arguments: "", name: "" }).length;

interface PartialCall {
  id: string;
  type: string;
  name: string;
  arguments: string;
}

/** A stream's calls of one choice, fragment by fragment. */
export class StreamedToolCalls {
  private calls: PartialCall[] = [];
  /** The deprecated functions API's call, once a delta carried `function_call`. */
  private functionCall: { name: string; arguments: string } | null = null;
  private broken = false;
  /** Characters held (ids, names, arguments and each call's overhead): the observer bounds the reply,
   * text and calls together, by it. */
  chars = 0;

  /** Adds one delta's calls: its `tool_calls` (an array of fragments) and its `function_call` (one). */
  add(delta: Record<string, unknown>): void {
    this.addToolCalls(delta["tool_calls"]);
    this.addFunctionCall(delta["function_call"]);
  }

  private addFunctionCall(fragment: unknown): void {
    if (this.broken || fragment === undefined || fragment === null) return;
    if (!isRecord(fragment) || this.calls.length > 0) return this.giveUp();
    const name = optionalString(fragment["name"]);
    const args = optionalString(fragment["arguments"]);
    if (name === null || args === null) return this.giveUp();
    if (this.functionCall === null) {
      this.functionCall = { name: "", arguments: "" };
      this.chars += FUNCTION_CALL_OVERHEAD_CHARS;
    }
    // As openai-node and openai-python accumulate it: a name sent again replaces the one before.
    if (name !== "") {
      this.chars += name.length - this.functionCall.name.length;
      this.functionCall.name = name;
    }
    this.functionCall.arguments += args;
    this.chars += args.length;
  }

  private addToolCalls(fragments: unknown): void {
    if (this.broken || fragments === undefined || fragments === null) return;
    if (!Array.isArray(fragments) || (fragments.length > 0 && this.functionCall !== null)) return this.giveUp();
    for (const fragment of fragments) {
      if (!isRecord(fragment)) return this.giveUp();
      const index = fragment["index"];
      if (typeof index !== "number" || !Number.isSafeInteger(index) || index < 0 || index > this.calls.length) return this.giveUp();
      let call = this.calls[index];
      if (call === undefined) {
        call = { id: "", type: "", name: "", arguments: "" };
        this.calls.push(call);
        this.chars += CALL_OVERHEAD_CHARS;
      }
      const fn = fragment["function"];
      if (fn !== undefined && fn !== null && !isRecord(fn)) return this.giveUp();
      const id = optionalString(fragment["id"]);
      const type = optionalString(fragment["type"]);
      const name = optionalString(fn?.["name"]);
      const args = optionalString(fn?.["arguments"]);
      if (id === null || type === null || name === null || args === null) return this.giveUp();
      // The only tool type OpenAI's API has; any other is unknown to the next turn's keys (and was
      // held uncounted: a stream repeating a long one grew without bound).
      if (type !== "" && type !== "function") return this.giveUp();
      if (type !== "") call.type = type;
      // What is held is counted: an id or name sent again replaces the one before.
      if (id !== "") {
        this.chars += id.length - call.id.length;
        call.id = id;
      }
      if (name !== "") {
        this.chars += name.length - call.name.length;
        call.name = name;
      }
      call.arguments += args;
      this.chars += args.length;
    }
  }

  /** Drops what was gathered: the reply carried reasoning, so the calls are not learned. The engine
   * cached the reasoning between the prompt and the calls, and the client's next turn, in the common
   * case, renders the calls right after the prompt: OpenAI-compatible clients drop reasoning_content
   * (and `reasoning`) on the next turn, and DeepSeek-R1's template drops it always. Only the prompt's
   * blocks match there. The limit: Qwen3's template renders the reasoning a client does send back
   * within the current agent loop (after the last user message), so such a client's next turn
   * finds the reply cached and the LB predicts the prompt's blocks only; the chat keys leave
   * reasoning_content out either way, so learning the calls would over-predict every other client. */
  clear(): void {
    this.calls = [];
    this.functionCall = null;
    this.chars = 0;
  }

  /** The calls as the next turn sends them back; null when they are unknown. */
  result(): AssistantToolCall[] | null {
    if (this.broken) return null;
    return this.functionCall !== null ? completeFunctionCall(this.functionCall) : completeCalls(this.calls);
  }

  private giveUp(): void {
    this.broken = true;
    this.clear();
  }
}

/** A whole message's calls (its `tool_calls`, or its `function_call`) as the next turn sends them back:
 * [] for none, null when unknown. */
export function messageToolCalls(message: Record<string, unknown>): AssistantToolCall[] | null {
  const value = message["tool_calls"];
  const functionCall = message["function_call"];
  if (functionCall !== undefined && functionCall !== null) {
    // vLLM writes `tool_calls: []` on every message; a function call beside real ones is not a reply
    // any API makes.
    if (Array.isArray(value) && value.length > 0) return null;
    if (!isRecord(functionCall)) return null;
    const name = optionalString(functionCall["name"]);
    const args = optionalString(functionCall["arguments"]);
    return name === null || args === null ? null : completeFunctionCall({ name, arguments: args });
  }
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value)) return null;
  const calls: PartialCall[] = [];
  for (const call of value) {
    if (!isRecord(call)) return null;
    const fn = call["function"];
    if (!isRecord(fn)) return null;
    const id = optionalString(call["id"]);
    const type = optionalString(call["type"]);
    const name = optionalString(fn["name"]);
    const args = optionalString(fn["arguments"]);
    if (id === null || type === null || name === null || args === null) return null;
    calls.push({ id, type, name, arguments: args });
  }
  return completeCalls(calls);
}

function completeCalls(calls: readonly PartialCall[]): AssistantToolCall[] | null {
  const complete: AssistantToolCall[] = [];
  for (const call of calls) {
    // A call without an id cannot be answered by a tool message, nor sent back as the engine wrote it.
    if (call.id === "" || call.name === "" || (call.type !== "" && call.type !== "function")) return null;
    complete.push({ id: call.id, type: "function", function: { name: call.name, arguments: call.arguments } });
  }
  return complete;
}

function completeFunctionCall(call: { name: string; arguments: string }): AssistantToolCall[] | null {
  // A call without a name cannot be sent back as the engine wrote it.
  return call.name === "" ? null : [{ type: "function_call", function: { name: call.name, arguments: call.arguments } }];
}

/** A string field: its value, "" when absent or null (engines send `"id": null` on later fragments),
 * null when it is anything else. */
function optionalString(value: unknown): string | null {
  if (value === undefined || value === null) return "";
  return typeof value === "string" ? value : null;
}
