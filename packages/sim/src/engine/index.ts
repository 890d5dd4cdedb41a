// The engine model: one SGLang/vLLM-like engine, driven by the fleet simulator (virtual clock) and by
// the simulated engine HTTP server (real timers).
export { EngineModel } from "./engine-model";
export type { DoneEvent, EngineEvent, EngineLoad, EngineRequest, FirstTokenEvent, StepListener, TokensEvent } from "./engine-types";
export { DEMO_ENGINE_PARAMS, PAPER_ENGINE_PARAMS, validateEngineParams, type EngineParams } from "./params";
export { PrefixCache } from "./prefix-cache";
