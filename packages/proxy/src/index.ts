// @meridian/proxy: the regional load balancer, as a library (startProxy) for tests and the demo.
export { startProxy, type RunningProxy, type StartProxyOptions } from "./server";
export { Balancer } from "./balancer";
export { loadSettings, parseConfigDocument, parseProcessSettings, ProcessSettingsSchema, type ProcessSettings, type ProcessSettingsInput } from "./settings";
export { parsePrometheusText, parseSampleLine, type ParsedMetrics, type PromSample } from "./prometheus-text";
export { readEngineLoad, detectDialect, type EngineDialect } from "./engine-metrics";
export { SseObserver } from "./sse";
export { TelemetryLog } from "./telemetry";
