// audit router: validates input, calls one service function, maps domain errors (see ../trpc/errors.ts).
import "server-only";
import type { TRPCRouterRecord } from "@trpc/server";
import { z } from "zod";
import { listAudit } from "../services/audit";
import { call } from "../trpc/errors";
import { viewerProcedure } from "../trpc/init";

export const auditRouter = {
  list: viewerProcedure
    .input(
      z
        .object({
          actor: z.string().trim().optional(),
          action: z.string().trim().optional(),
          target: z.string().trim().optional(),
          limit: z.int().min(1).max(1000).optional(),
        })
        .optional(),
    )
    .query(({ ctx, input }) => call(() => listAudit(ctx.rt, input ?? {}))),
} satisfies TRPCRouterRecord;
