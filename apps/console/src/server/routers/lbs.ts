// lbs router: validates input, calls one service function, maps domain errors (see ../trpc/errors.ts).
import "server-only";
import type { TRPCRouterRecord } from "@trpc/server";
import { z } from "zod";
import { createLb, deleteLb, entrypointMap, failbackLb, failoverLb, lbById, listLbs, setPolicy, updateLb } from "../services/lbs";
import { issueLbToken, rotateLbToken } from "../services/lb-tokens";
import { limitsInput } from "../services/lbs-limits";
import { routingSettingsInput } from "../services/lbs-routing-settings";
import { call } from "../trpc/errors";
import { operatorProcedure, viewerProcedure } from "../trpc/init";
import { crossRegion, idInput, name, policyName, regionName, url } from "./schemas";

export const lbsRouter = {
  list: viewerProcedure.query(({ ctx }) => call(() => listLbs(ctx.rt))),
  byId: viewerProcedure.input(idInput).query(({ ctx, input }) => call(() => lbById(ctx.rt, input))),
  entrypoints: viewerProcedure.query(({ ctx }) => call(() => entrypointMap(ctx.rt))),
  create: operatorProcedure
    .input(
      z.object({
        name,
        url,
        adminUrl: url.nullable().optional(),
        region: regionName,
        policy: policyName.optional(),
        crossRegion: crossRegion.optional(),
        limits: limitsInput.optional(),
        routingSettings: routingSettingsInput.optional(),
      }),
    )
    .mutation(({ ctx, input }) => call(() => createLb(ctx.rt, ctx.actor, input))),
  update: operatorProcedure
    .input(
      z.object({
        id: z.string().min(1),
        name: name.optional(),
        url: url.optional(),
        adminUrl: url.nullable().optional(),
        region: regionName.optional(),
        limits: limitsInput.optional(),
        routingSettings: routingSettingsInput.optional(),
      }),
    )
    .mutation(({ ctx, input }) => call(() => updateLb(ctx.rt, ctx.actor, input))),
  delete: operatorProcedure.input(idInput).mutation(({ ctx, input }) => call(() => deleteLb(ctx.rt, ctx.actor, input))),
  setPolicy: operatorProcedure
    .input(z.object({ id: z.string().min(1), policy: policyName, crossRegion }))
    .mutation(({ ctx, input }) => call(() => setPolicy(ctx.rt, ctx.actor, input))),
  failover: operatorProcedure.input(idInput).mutation(({ ctx, input }) => call(() => failoverLb(ctx.rt, ctx.actor, input))),
  failback: operatorProcedure.input(idInput).mutation(({ ctx, input }) => call(() => failbackLb(ctx.rt, ctx.actor, input))),
  /** A new token replacing all of the LB's; returned once. */
  issueToken: operatorProcedure.input(idInput).mutation(({ ctx, input }) => call(() => issueLbToken(ctx.rt, ctx.actor, input))),
  /** Rotates the LB's token without the operator's help (the LB accepts both during the grace period). */
  rotateToken: operatorProcedure.input(idInput).mutation(({ ctx, input }) => call(() => rotateLbToken(ctx.rt, ctx.actor, input))),
} satisfies TRPCRouterRecord;
