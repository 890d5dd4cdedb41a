// regions router: validates input, calls one service function, maps domain errors (see ../trpc/errors.ts).
import "server-only";
import type { TRPCRouterRecord } from "@trpc/server";
import { z } from "zod";
import { createRegion, deleteRegion, listRegions, rttMatrix, updateRegion } from "../services/regions";
import { call } from "../trpc/errors";
import { operatorProcedure, viewerProcedure } from "../trpc/init";
import { idInput, regionName } from "./schemas";

const displayName = z.string().trim().max(100, { error: "display name must be at most 100 characters" });

export const regionsRouter = {
  list: viewerProcedure.query(({ ctx }) => call(() => listRegions(ctx.rt))),
  rttMatrix: viewerProcedure.query(({ ctx }) => call(() => rttMatrix(ctx.rt))),
  create: operatorProcedure
    .input(z.object({ name: regionName, displayName: displayName.optional() }))
    .mutation(({ ctx, input }) => call(() => createRegion(ctx.rt, ctx.actor, input))),
  update: operatorProcedure
    .input(z.object({ id: z.string().min(1), name: regionName.optional(), displayName: displayName.nullable().optional() }))
    .mutation(({ ctx, input }) => call(() => updateRegion(ctx.rt, ctx.actor, input))),
  delete: operatorProcedure.input(idInput).mutation(({ ctx, input }) => call(() => deleteRegion(ctx.rt, ctx.actor, input))),
} satisfies TRPCRouterRecord;
