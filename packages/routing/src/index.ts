// @meridian/routing: pure routing logic shared by the proxy (live) and the simulator (virtual time).

export * from "./types";
export * from "./errors";
export { hashString, hashString32 } from "./hash";
export * from "./keys";
export * from "./prefix-index";
export * from "./rng";
export * from "./validate";
export * from "./select";
export { HashRing } from "./policies/hashing";
export { requestLoad } from "./policies/common";
export * from "./availability";
export * from "./token-estimator";
export * from "./cache-feedback";
export * from "./cache-truth";
export * from "./engine-restart";
export * from "./prediction-window";
export { usageNumber } from "./usage";
