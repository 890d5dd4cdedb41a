// overview router: validates input, calls one service function, maps domain errors (see ../trpc/errors.ts).
import "server-only";
import type { TRPCRouterRecord } from "@trpc/server";
import { overviewSummary } from "../services/overview";
import { call } from "../trpc/errors";
import { viewerProcedure } from "../trpc/init";

export const overviewRouter = {
  summary: viewerProcedure.query(({ ctx }) => call(() => overviewSummary(ctx.rt))),
} satisfies TRPCRouterRecord;
