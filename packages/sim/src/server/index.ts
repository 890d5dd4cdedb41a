// The simulated engine HTTP server: an SGLang/vLLM stand-in on node:http around the EngineModel.
export { startEngineServer, CHAT_BLOCK_TOKENS, OUTPUT_TOKENS_HEADER, type EngineServer, type EngineServerOptions } from "./server";
export { CHARS_PER_TOKEN } from "./prompt";
export { EngineDriver, type EngineListener } from "./engine-driver";
export { EngineMetrics, DIALECTS, type Dialect } from "./metrics";
export { emulatedRttMs, SRC_REGION_HEADER, type RttMatrix } from "./network";
export { OpenAIError, type OpenAIErrorBody, type Usage } from "./openai";
export { formatValue as formatPrometheusValue } from "./prometheus";
export { ReplyText } from "./filler";
export { DEMO_MODEL, DEMO_RTT_MS } from "./demo-network";
export { engineSetupWarnings } from "./config";
