// One module per table; drizzle-kit reads this barrel (see drizzle.config.ts).
export * from "./regions";
export * from "./load-balancers";
export * from "./replicas";
export * from "./lb-configs";
export * from "./tuner-runs";
export * from "./tuner-steps";
export * from "./observed-rtts";
export * from "./entrypoints";
export * from "./audit-log";
export * from "./users";
export * from "./sessions";
export * from "./experiments";
export * from "./lb-tokens";
export * from "./lb-proofs";
export * from "./client-keys";
