// The console's tRPC router: one sub-router per domain. `AppRouter` is the type the UI imports.
import "server-only";
import { auditRouter } from "../routers/audit";
import { authRouter } from "../routers/auth";
import { experimentsRouter } from "../routers/experiments";
import { lbsRouter } from "../routers/lbs";
import { overviewRouter } from "../routers/overview";
import { regionsRouter } from "../routers/regions";
import { replicasRouter } from "../routers/replicas";
import { tunerRouter } from "../routers/tuner";
import { router } from "./init";

export const appRouter = router({
  auth: authRouter,
  overview: overviewRouter,
  regions: regionsRouter,
  replicas: replicasRouter,
  lbs: lbsRouter,
  tuner: tunerRouter,
  experiments: experimentsRouter,
  audit: auditRouter,
});

export type AppRouter = typeof appRouter;
