export { ProtocolError, schemaTag } from "./errors";
export type { ProtocolIssue, SafeParseResult } from "./errors";
export * from "./lb-config";
export * from "./telemetry";
export * from "./lb-state";
export * from "./peer-report";
export * from "./openai-error";
export * from "./client-auth";
export * from "./lb-auth";
export {
  weights as WeightsSchema,
  policyName as PolicyNameSchema,
  httpUrl as HttpUrlSchema,
  durationMs as DurationMsSchema,
  durationMsOrZero as DurationMsOrZeroSchema,
  headerSafeId as HeaderSafeIdSchema,
  MAX_TIMER_MS,
} from "./common";
