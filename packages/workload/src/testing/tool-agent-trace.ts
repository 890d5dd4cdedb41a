// A small tool-agent-shaped Mooncake trace for tests: most conversations start with one shared
// 24-block tool prompt, the rest with a 1-block system prompt (as the conversation trace's block 0),
// and a conversation's turns extend its earlier prompts, as the Mooncake trace's do.
import type { TraceRequest } from "../trace/types";

export const TOOL_PROMPT: readonly number[] = Array.from({ length: 24 }, (_, k) => 5_000_000 + k);

/** 400 conversations of 1–4 turns (1,000 rows), 85 % of them behind TOOL_PROMPT; `conversationOf[i]` is row i's. */
export function toolAgentTrace(): { rows: TraceRequest[]; conversationOf: number[] } {
  const rows: TraceRequest[] = [];
  const conversationOf: number[] = [];
  for (let c = 0; c < 400; c++) {
    const shared = c % 20 < 17 ? TOOL_PROMPT : [0];
    const turns = 1 + (c % 4);
    for (let t = 0; t < turns; t++) {
      // Turn t holds the conversation's first 2 + 3t blocks (ids unique to the conversation).
      const own = Array.from({ length: 2 + 3 * t }, (_, j) => 1_000 + c * 100 + j);
      const hashIds = [...shared, ...own];
      const timestampMs = c * 3_000 + t * 60_000;
      conversationOf.push(c);
      rows.push({
        index: rows.length,
        timestampMs,
        sourceTimestampMs: timestampMs,
        inputTokens: hashIds.length * 512,
        outputTokens: 100,
        hashIds,
        blockTokens: 512,
        format: "mooncake",
      });
    }
  }
  return { rows, conversationOf };
}
