// The PostgreSQL tables: the same declarations as the SQLite barrel (index.ts), built with pg-core
// (columns.ts). drizzle-kit's PostgreSQL config (drizzle.pg.config.ts) reads this barrel; the keys
// match index.ts so that code can take its tables from either.
import { auditLogTable } from "./audit-log";
import { clientKeysTable } from "./client-keys";
import { consoleLeasesTable } from "./console-leases";
import { entrypointsTable } from "./entrypoints";
import { experimentsTable } from "./experiments";
import { lbConfigsTable } from "./lb-configs";
import { lbProofsTable } from "./lb-proofs";
import { lbTokensTable } from "./lb-tokens";
import { loadBalancersTable } from "./load-balancers";
import { observedRttsTable } from "./observed-rtts";
import { regionsTable } from "./regions";
import { replicasTable } from "./replicas";
import { sessionsTable } from "./sessions";
import { tunerRunsTable } from "./tuner-runs";
import { tunerStepsTable } from "./tuner-steps";
import { usersTable } from "./users";

export const regions = regionsTable.pg;
export const loadBalancers = loadBalancersTable.pg;
export const replicas = replicasTable.pg;
export const lbConfigs = lbConfigsTable.pg;
export const tunerRuns = tunerRunsTable.pg;
export const tunerSteps = tunerStepsTable.pg;
export const observedRtts = observedRttsTable.pg;
export const entrypoints = entrypointsTable.pg;
export const auditLog = auditLogTable.pg;
export const users = usersTable.pg;
export const sessions = sessionsTable.pg;
export const experiments = experimentsTable.pg;
export const lbTokens = lbTokensTable.pg;
export const lbProofs = lbProofsTable.pg;
export const clientKeys = clientKeysTable.pg;
export const consoleLeases = consoleLeasesTable.pg;
