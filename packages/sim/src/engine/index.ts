// The engine model: one SGLang/vLLM-like engine, driven by the fleet simulator (virtual clock) and by
// the simulated engine HTTP server (real timers).
export {
  EngineModel,
  type DoneEvent,
  type EngineEvent,
  type EngineLoad,
  type EngineRequest,
  type FirstTokenEvent,
  type StepListener,
  type TokensEvent,
} from "./engine-model";
export { DEMO_ENGINE_PARAMS, PAPER_ENGINE_PARAMS, validateEngineParams, type EngineParams } from "./params";
export { PrefixCache } from "./prefix-cache";
