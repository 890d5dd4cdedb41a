// tuner router: validates input, calls one service function, maps domain errors (see ../trpc/errors.ts).
import "server-only";
import type { TRPCRouterRecord } from "@trpc/server";
import { z } from "zod";
import { EVALUATION_MODES } from "@meridian/tuner";
import {
  fleetTuner,
  resetTuner,
  setManualWeights,
  setTunerScope,
  startTuner,
  stopTuner,
  TUNER_SCOPES,
  tunerByLb,
  tunerScope,
  updateTuner,
} from "../services/tuner";
import { call } from "../trpc/errors";
import { operatorProcedure, viewerProcedure } from "../trpc/init";
import { bounds, guardrails, lbIdInput, tunerTarget, weights } from "./schemas";

export const tunerRouter = {
  byLb: viewerProcedure.input(lbIdInput).query(({ ctx, input }) => call(() => tunerByLb(ctx.rt, input))),
  fleet: viewerProcedure.query(({ ctx }) => call(() => fleetTuner(ctx.rt))),
  scope: viewerProcedure.query(({ ctx }) => call(() => tunerScope(ctx.rt))),
  setScope: operatorProcedure
    .input(z.object({ scope: z.enum(TUNER_SCOPES, { error: `scope must be one of ${TUNER_SCOPES.join(", ")}` }) }))
    .mutation(({ ctx, input }) => call(() => setTunerScope(ctx.rt, ctx.actor, input))),
  start: operatorProcedure.input(tunerTarget({})).mutation(({ ctx, input }) => call(() => startTuner(ctx.rt, ctx.actor, input))),
  stop: operatorProcedure.input(tunerTarget({})).mutation(({ ctx, input }) => call(() => stopTuner(ctx.rt, ctx.actor, input))),
  reset: operatorProcedure.input(tunerTarget({})).mutation(({ ctx, input }) => call(() => resetTuner(ctx.rt, ctx.actor, input))),
  setManual: operatorProcedure.input(tunerTarget({ weights })).mutation(({ ctx, input }) => call(() => setManualWeights(ctx.rt, ctx.actor, input))),
  update: operatorProcedure
    .input(
      tunerTarget({
        bounds: bounds.optional(),
        window: z.int({ error: "window must be a whole number of samples" }).min(8, { error: "window must be at least 8 samples" }).max(100_000).optional(),
        hop: z.int({ error: "hop must be a whole number of samples" }).min(1).max(100_000).optional(),
        evaluation: z.enum(EVALUATION_MODES, { error: `evaluation must be one of ${EVALUATION_MODES.join(", ")}` }).optional(),
        trial: z
          .object({
            share: z.number().gt(0, { error: "trial share must be > 0" }).lt(1, { error: "trial share must be < 1" }).optional(),
            lookEvery: z
              .int({ error: "lookEvery must be a whole number of samples" })
              .min(10, { error: "lookEvery must be at least 10 samples" })
              .max(100_000)
              .optional(),
            maxSamples: z
              .int({ error: "maxSamples must be a whole number of samples" })
              .min(20, { error: "maxSamples must be at least 20 samples" })
              .max(1_000_000)
              .optional(),
          })
          .optional(),
        guardrails: guardrails.optional(),
      }),
    )
    .mutation(({ ctx, input }) => call(() => updateTuner(ctx.rt, ctx.actor, input))),
} satisfies TRPCRouterRecord;
