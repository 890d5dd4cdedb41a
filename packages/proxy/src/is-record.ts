// The one test of "a JSON object" the proxy reads request and response bodies with.

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
