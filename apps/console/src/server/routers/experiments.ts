// experiments router: validates input, calls one service function, maps domain errors (see ../trpc/errors.ts).
import "server-only";
import type { TRPCRouterRecord } from "@trpc/server";
import { z } from "zod";
import { experimentStatus, listExperiments, listTraces, liveSummary, runExperiment, saveExperiment } from "../services/experiments";
import { call } from "../trpc/errors";
import { operatorProcedure, viewerProcedure } from "../trpc/init";
import { experimentPolicy, idInput, name } from "./schemas";

export const experimentsRouter = {
  traces: viewerProcedure.query(({ ctx }) => call(() => listTraces(ctx.rt))),
  list: viewerProcedure.query(({ ctx }) => call(() => listExperiments(ctx.rt))),
  live: viewerProcedure.query(({ ctx }) => call(() => liveSummary(ctx.rt))),
  status: viewerProcedure.input(idInput).query(({ ctx, input }) => call(() => experimentStatus(ctx.rt, input))),
  run: operatorProcedure
    .input(
      z
        .object({
          traceId: z.string().min(1, { error: "choose a trace" }),
          fromMs: z.number().min(0).optional(),
          toMs: z.number().min(0).optional(),
          timeScale: z.number().positive({ error: "time scale must be > 0" }).max(1000),
          kind: z.enum(["compare", "grid"]).optional(),
          // The simulator refuses a policy listed twice: said here, as a 400, rather than as a failed run.
          policies: z
            .array(experimentPolicy)
            .max(10)
            .superRefine((ps, ctx) => {
              const twice = ps.find((p, i) => ps.indexOf(p) !== i);
              if (twice !== undefined) ctx.addIssue({ code: "custom", message: `policy "${twice}" is listed twice` });
            }),
          grid: z
            .object({
              preset: z.enum(["paper", "global"]),
              // Worded like the other fields (the form shows it): zod's default names no field.
              promptFactor: z.number().positive({ error: "prompt factor must be > 0" }).max(1, { error: "prompt factor must be at most 1" }),
              points: z.int().min(2, { error: "a grid needs at least 2 points per axis" }).max(12, { error: "at most 12 points per axis (144 simulations)" }),
            })
            .optional(),
        })
        .refine((v) => v.fromMs === undefined || v.toMs === undefined || v.fromMs < v.toMs, {
          error: "the window's start must be before its end",
          path: ["toMs"],
        })
        .refine((v) => v.kind === "grid" || v.policies.length > 0, { error: "choose at least one policy", path: ["policies"] }),
    )
    .mutation(({ ctx, input }) => call(() => runExperiment(ctx.rt, ctx.actor, input))),
  save: operatorProcedure.input(z.object({ id: z.string().min(1), name })).mutation(({ ctx, input }) => call(() => saveExperiment(ctx.rt, ctx.actor, input))),
} satisfies TRPCRouterRecord;
