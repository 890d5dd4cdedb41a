// The fleet simulator's public API.
export { EventQueue } from "./event-queue";
export * from "./spec";
export * from "./presets";
export * from "./stats";
export * from "./summary";
export * from "./workload";
export * from "./simulator";
export * from "./experiments";
export * from "./regimes";
export * from "./grid";
