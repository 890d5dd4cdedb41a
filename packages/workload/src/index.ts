// @meridian/workload: trace readers (Mooncake, ART-Chat), trace controls and region assignment,
// prompt synthesis, the built-in multi-turn generator, and the replay client.
export * from "./trace/types";
export { TraceRowError, readTrace, parseTraceText, loadTrace, type TraceReadOptions } from "./trace/reader";
export * from "./trace/controls";
export * from "./trace/session-roots";
export { bundledTracePath } from "./trace/bundled";
export * from "./prompt/synth";
export * from "./generator/multi-turn";
export * from "./generator/turns";
export type { ReplayItem } from "./replay/items";
export { ReplayOutputError } from "./replay/output";
export {
  runReplay,
  startLoadGenerator,
  type ReplayCommonOptions,
  type RunReplayOptions,
  type LoadGeneratorOptions,
  type LoadGenerator,
} from "./replay/run";
export * from "./replay/stats";
export * from "./replay/entrypoints";
export { streamChat, type ChatStreamRequest, type ChatStreamResult } from "./replay/stream-chat";
