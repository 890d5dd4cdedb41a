// Generated request bodies for the LB fuzz test, from a seed: valid chat and completion requests,
// the same with one to three fields mutated (every JSON type, out-of-range numbers, odd strings, deep
// nesting, unknown fields, odd roles and content parts), and raw byte mutations (truncation, flipped
// and inserted bytes, invalid UTF-8, duplicate keys, top-level non-objects). Deterministic for a seed,
// so a failing body can be regenerated.
import { createRng, type Rng } from "@meridian/routing";

export interface FuzzCase {
  path: "/v1/chat/completions" | "/v1/completions";
  body: Buffer;
  /** What it was made from, for failure messages. */
  recipe: string;
}

const pick = <T>(rng: Rng, items: readonly T[]): T => items[Math.floor(rng.next() * items.length)] as T;
const int = (rng: Rng, lo: number, hi: number): number => lo + Math.floor(rng.next() * (hi - lo + 1));

const NUMBERS = [0, -0, 1, -1, -5, 2, 1.5, 128, 129, 1e308, -1e308, 2 ** 53 + 2, 0.000001, 7, -2, 2.0000001];
const STRINGS = [
  "",
  "x",
  "yes",
  "true",
  "null",
  "user",
  "wizard",
  "\u0000",
  "\ud800",
  "😀".repeat(50),
  "é".repeat(1000),
  "a".repeat(20_000),
  "\r\n\r\n",
  "data: [DONE]\n\n",
];
const ROLES = ["system", "user", "assistant", "tool", "developer", "function", "wizard", "", "USER", "Assistant"];
const PART_TYPES = ["text", "image_url", "input_audio", "file", "refusal", "video", ""];
const FIELDS = [
  "model",
  "messages",
  "prompt",
  "stream",
  "stream_options",
  "max_tokens",
  "max_completion_tokens",
  "n",
  "temperature",
  "top_p",
  "stop",
  "user",
  "seed",
  "presence_penalty",
  "tools",
  "response_format",
  "logprobs",
];

function nested(depth: number, leaf: unknown, asObject: boolean): unknown {
  let value = leaf;
  for (let i = 0; i < depth; i++) value = asObject ? { k: value } : [value];
  return value;
}

/** A random JSON value, shallow unless `deep`. */
function randomValue(rng: Rng, budget = 3): unknown {
  const roll = rng.next();
  if (roll < 0.15) return pick(rng, NUMBERS);
  if (roll < 0.3) return pick(rng, STRINGS);
  if (roll < 0.38) return rng.next() < 0.5;
  if (roll < 0.44) return null;
  if (roll < 0.5) return nested(pick(rng, [10, 63, 64, 65, 200, 1_000]), pick(rng, [1, "x", null]), rng.next() < 0.5);
  if (budget <= 0) return {};
  if (roll < 0.75) return Array.from({ length: int(rng, 0, 4) }, () => randomValue(rng, budget - 1));
  const out: Record<string, unknown> = {};
  for (let i = int(rng, 0, 4); i > 0; i--)
    out[pick(rng, [...FIELDS, "type", "text", "role", "content", "__proto__", "constructor", "include_usage"])] = randomValue(rng, budget - 1);
  return out;
}

function validChat(rng: Rng, model: string): Record<string, unknown> {
  const turns = int(rng, 1, 6);
  const messages: Record<string, unknown>[] = [{ role: "system", content: "You are terse. ".repeat(int(rng, 1, 40)) }];
  for (let i = 0; i < turns; i++) {
    const text = `turn ${i} ${"lorem ipsum ".repeat(int(rng, 0, 30))}`;
    messages.push({ role: i % 2 === 0 ? "user" : "assistant", content: rng.next() < 0.8 ? text : [{ type: "text", text }] });
  }
  const body: Record<string, unknown> = { model, messages, max_tokens: int(rng, 1, 8) };
  if (rng.next() < 0.5) body["stream"] = true;
  if (rng.next() < 0.2) body["stream_options"] = { include_usage: true };
  if (rng.next() < 0.3) body["temperature"] = rng.next() * 2;
  if (rng.next() < 0.2) body["user"] = `u${int(rng, 0, 50)}`;
  return body;
}

function validCompletion(rng: Rng, model: string): Record<string, unknown> {
  const body: Record<string, unknown> = { model, prompt: `Once upon a time ${"there was ".repeat(int(rng, 0, 50))}`, max_tokens: int(rng, 1, 8) };
  if (rng.next() < 0.5) body["stream"] = true;
  return body;
}

function mutateMessages(rng: Rng, body: Record<string, unknown>): string {
  const messages = body["messages"];
  if (!Array.isArray(messages) || messages.length === 0) return "messages: none";
  const at = int(rng, 0, messages.length - 1);
  const message = { ...(messages[at] as Record<string, unknown>) };
  const roll = rng.next();
  let what: string;
  if (roll < 0.3) {
    message["role"] = rng.next() < 0.8 ? pick(rng, ROLES) : randomValue(rng);
    what = "role";
  } else if (roll < 0.6) {
    message["content"] =
      rng.next() < 0.5 ? randomValue(rng) : [{ type: pick(rng, PART_TYPES), text: rng.next() < 0.7 ? "part" : randomValue(rng), extra: randomValue(rng) }];
    what = "content";
  } else if (roll < 0.8) {
    delete message[pick(rng, ["role", "content"])];
    what = "missing field";
  } else {
    message[pick(rng, ["name", "tool_calls", "tool_call_id", "weird"])] = randomValue(rng);
    what = "extra field";
  }
  messages[at] = message;
  return `messages[${at}] ${what}`;
}

function mutateFields(rng: Rng, body: Record<string, unknown>): string {
  const done: string[] = [];
  for (let i = int(rng, 1, 3); i > 0; i--) {
    const roll = rng.next();
    if (roll < 0.3) done.push(mutateMessages(rng, body));
    else if (roll < 0.5) {
      const field = pick(rng, FIELDS);
      delete body[field];
      done.push(`-${field}`);
    } else {
      const field = rng.next() < 0.85 ? pick(rng, FIELDS) : `x_${int(rng, 0, 9)}`;
      body[field] = randomValue(rng);
      done.push(`${field}=`);
    }
  }
  return done.join(" ");
}

function mutateBytes(rng: Rng, bytes: Buffer): { body: Buffer; what: string } {
  const roll = rng.next();
  if (roll < 0.25) {
    const at = int(rng, 0, bytes.length);
    return { body: bytes.subarray(0, at), what: `truncated at ${at}` };
  }
  if (roll < 0.45) {
    const out = Buffer.from(bytes);
    for (let i = int(rng, 1, 4); i > 0; i--) out[int(rng, 0, out.length - 1)] = int(rng, 0, 255);
    return { body: out, what: "flipped bytes" };
  }
  if (roll < 0.6) {
    const at = int(rng, 0, bytes.length);
    const junk = Buffer.from(Array.from({ length: int(rng, 1, 16) }, () => int(rng, 0, 255)));
    return { body: Buffer.concat([bytes.subarray(0, at), junk, bytes.subarray(at)]), what: "inserted bytes" };
  }
  if (roll < 0.7) {
    const text = bytes.toString("utf8");
    return { body: Buffer.from(`{"model":5,${text.slice(1)}`), what: "duplicate key" };
  }
  if (roll < 0.75) {
    // Deeper than JSON.stringify can build: written out as text.
    const depth = pick(rng, [5_000, 50_000, 150_000]);
    const open = rng.next() < 0.5 ? "[" : '{"k":';
    const close = open === "[" ? "]" : "}";
    return { body: Buffer.from(`{"x":${open.repeat(depth)}1${close.repeat(depth)},${bytes.toString("utf8").slice(1)}`), what: `nested ${depth} deep` };
  }
  if (roll < 0.9) {
    return {
      body: Buffer.from(pick(rng, ["", " ", "[]", "1", '"x"', "null", "true", "{}", "[{}]", "1e999", '{"__proto__":{"polluted":1}}', "\ufeff{}"])),
      what: "top level",
    };
  }
  return { body: Buffer.from(Array.from({ length: int(rng, 1, 200) }, () => int(rng, 0, 255))), what: "random bytes" };
}

/** `count` cases from `seed`: about a quarter valid, half field mutations, a quarter byte mutations. */
export function fuzzCases(seed: number, count: number, model: string): FuzzCase[] {
  const rng = createRng(seed);
  const cases: FuzzCase[] = [];
  for (let i = 0; i < count; i++) {
    const chat = rng.next() < 0.75;
    const body = chat ? validChat(rng, model) : validCompletion(rng, model);
    // Sent to the other endpoint now and then.
    const path = (chat ? rng.next() < 0.95 : rng.next() < 0.05) ? "/v1/chat/completions" : "/v1/completions";
    const roll = rng.next();
    if (roll < 0.25) {
      cases.push({ path, body: Buffer.from(JSON.stringify(body)), recipe: `#${i} valid` });
    } else if (roll < 0.75) {
      const what = mutateFields(rng, body);
      cases.push({ path, body: Buffer.from(JSON.stringify(body)), recipe: `#${i} fields: ${what}` });
    } else {
      const { body: bytes, what } = mutateBytes(rng, Buffer.from(JSON.stringify(body)));
      cases.push({ path, body: bytes, recipe: `#${i} bytes: ${what}` });
    }
  }
  return cases;
}
