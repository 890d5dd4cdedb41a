// The fleet simulator's public API.
export { EventQueue } from "./event-queue";
export * from "./spec";
export * from "./presets";
export * from "./stats";
export * from "./summary";
export * from "./workload";
export * from "./simulator";
export { LbDriver, SIM_MODEL, simLbConfig } from "./lb-driver";
export type { LbDriverSettings, LbTransport, Leg, SimLb, SimLbSpec, SimReplicaSpec } from "./lb-driver";
export { runLbScenario, type ScenarioRun } from "./scenario-runner";
export * from "./experiments";
export * from "./result-json";
export { OracleIndex } from "./oracle-index";
export * from "./regimes";
export * from "./grid";
