// The SQLite tables, one module per table; drizzle-kit's SQLite config reads this barrel
// (drizzle.config.ts). The PostgreSQL tables are built from the same declarations (pg.ts).
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
export * from "./console-leases";
