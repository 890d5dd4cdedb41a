// The tool calls of a reply, as the client's next turn sends them back in its assistant message
// (`{ role: "assistant", content, tool_calls: [{ id, type: "function", function: { name, arguments } }] }`),
// so that an agent's turn that is tool calls alone (its text empty) is still learned as the next
// turn. Read from a whole message's `tool_calls` or put together from a stream's `delta.tool_calls`
// fragments the way OpenAI clients accumulate them: by `index`, `id`, `type` and `function.name` from
// the fragment that carries them (the first), `function.arguments` concatenated. Anything the LB cannot
// place (no index, an index past the next one, a field of the wrong type, a call without id or name, a
// tool type other than "function") makes the calls unknown: the reply is then not learned beyond the
// prompt, since a next turn keyed without them would be wrong.
import type { AssistantToolCall } from "@meridian/routing";
import { isRecord } from "./is-record";

/** Characters one call costs besides its id, name and arguments, as its JSON: what bounds a stream of
 * empty calls by the reply's character bound. */
const CALL_OVERHEAD_CHARS = JSON.stringify({ function: { arguments: "", name: "" }, id: "", type: "function" }).length;

interface PartialCall {
  id: string;
  type: string;
  name: string;
  arguments: string;
}

/** A stream's tool calls of one choice, fragment by fragment. */
export class StreamedToolCalls {
  private calls: PartialCall[] = [];
  private broken = false;
  /** Characters held (ids, names, arguments and each call's overhead): the observer bounds the reply,
   * text and tool calls together, by it. */
  chars = 0;

  /** Adds one delta's `tool_calls` (an array of fragments). */
  add(fragments: unknown): void {
    if (this.broken || fragments === undefined || fragments === null) return;
    if (!Array.isArray(fragments)) return this.giveUp();
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

  /** Drops what was gathered (the reply carried reasoning: it is not learned). */
  clear(): void {
    this.calls = [];
    this.chars = 0;
  }

  /** The calls as the next turn sends them back; null when they are unknown. */
  result(): AssistantToolCall[] | null {
    if (this.broken) return null;
    return completeCalls(this.calls);
  }

  private giveUp(): void {
    this.broken = true;
    this.clear();
  }
}

/** A whole message's `tool_calls` as the next turn sends them back: [] for none, null when unknown. */
export function messageToolCalls(value: unknown): AssistantToolCall[] | null {
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

/** A string field: its value, "" when absent or null (engines send `"id": null` on later fragments),
 * null when it is anything else. */
function optionalString(value: unknown): string | null {
  if (value === undefined || value === null) return "";
  return typeof value === "string" ? value : null;
}
