// The small window of the real Mooncake conversation trace shipped inside this package, so tests
// and demos run without ../shared/traces. Attribution: fixtures/README.md (Apache-2.0).
import { fileURLToPath } from "node:url";

/** Absolute path of fixtures/mooncake-conversation-first500.jsonl (first 500 rows, 0–165 s). */
export function bundledTracePath(): string {
  return fileURLToPath(new URL("../../fixtures/mooncake-conversation-first500.jsonl", import.meta.url));
}
