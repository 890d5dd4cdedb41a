// @meridian/sim: the engine model, the simulated engine HTTP server and the discrete-event fleet
// simulator (with its experiments: compare, tune, sweep).
export * from "./engine";
export * from "./server";
export * from "./fleet";
