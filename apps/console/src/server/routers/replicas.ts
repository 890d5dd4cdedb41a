// replicas router: validates input, calls one service function, maps domain errors (see ../trpc/errors.ts).
import "server-only";
import type { TRPCRouterRecord } from "@trpc/server";
import { z } from "zod";
import { cacheHistory, createReplica, deleteReplica, listReplicas, setReplicaState, shareHistory, updateReplica } from "../services/replicas";
import { replicaCapacityInput } from "../services/replicas-capacity";
import { call } from "../trpc/errors";
import { operatorProcedure, viewerProcedure } from "../trpc/init";
import { engineKind, idInput, name, regionName, replicaState, url } from "./schemas";

// Bounded as the URL is (schemas.ts): every config of the replica's LBs carries it. Model ids on
// Hugging Face are at most 96 characters; a served-model-name longer than 256 is a mistake.
const model = z.string().trim().min(1, { error: "model must not be empty" }).max(256, { error: "model must be at most 256 characters" });
const homeLbId = z.string().trim().min(1).nullable();
const maxConcurrency = replicaCapacityInput.maxConcurrency.optional();
const cacheCapacityTokens = replicaCapacityInput.cacheCapacityTokens.optional();

export const replicasRouter = {
  list: viewerProcedure.query(({ ctx }) => call(() => listReplicas(ctx.rt))),
  shareHistory: viewerProcedure.query(({ ctx }) => call(() => shareHistory(ctx.rt))),
  cacheHistory: viewerProcedure.query(({ ctx }) => call(() => cacheHistory(ctx.rt))),
  create: operatorProcedure
    .input(
      z.object({
        name,
        url,
        region: regionName,
        engine: engineKind.default("sglang"),
        model,
        homeLbId: homeLbId.optional(),
        maxConcurrency,
        cacheCapacityTokens,
      }),
    )
    .mutation(({ ctx, input }) => call(() => createReplica(ctx.rt, ctx.actor, input))),
  update: operatorProcedure
    .input(
      z.object({
        id: z.string().min(1),
        name: name.optional(),
        url: url.optional(),
        region: regionName.optional(),
        engine: engineKind.optional(),
        model: model.optional(),
        homeLbId: homeLbId.optional(),
        maxConcurrency,
        cacheCapacityTokens,
      }),
    )
    .mutation(({ ctx, input }) => call(() => updateReplica(ctx.rt, ctx.actor, input))),
  setState: operatorProcedure
    .input(z.object({ id: z.string().min(1), state: replicaState }))
    .mutation(({ ctx, input }) => call(() => setReplicaState(ctx.rt, ctx.actor, input))),
  delete: operatorProcedure.input(idInput).mutation(({ ctx, input }) => call(() => deleteReplica(ctx.rt, ctx.actor, input))),
} satisfies TRPCRouterRecord;
