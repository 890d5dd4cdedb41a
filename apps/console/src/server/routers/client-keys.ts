// clientKeys router: validates input, calls one service function, maps domain errors (see ../trpc/errors.ts).
import "server-only";
import type { TRPCRouterRecord } from "@trpc/server";
import { z } from "zod";
import { createClientKey, listClientKeys, revokeClientKey, setClientKeysRequired } from "../services/client-keys";
import { call } from "../trpc/errors";
import { operatorProcedure, viewerProcedure } from "../trpc/init";
import { name, regionName } from "./schemas";

const keyId = z.string().regex(/^[0-9a-f]{12}$/, { error: "a client key id is 12 lowercase hex characters" });

export const clientKeysRouter = {
  list: viewerProcedure.query(({ ctx }) => call(() => listClientKeys(ctx.rt))),
  create: operatorProcedure.input(z.object({ region: regionName, name })).mutation(({ ctx, input }) => call(() => createClientKey(ctx.rt, ctx.actor, input))),
  revoke: operatorProcedure.input(z.object({ id: keyId })).mutation(({ ctx, input }) => call(() => revokeClientKey(ctx.rt, ctx.actor, input))),
  setRequired: operatorProcedure
    .input(z.object({ region: regionName, required: z.boolean() }))
    .mutation(({ ctx, input }) => call(() => setClientKeysRequired(ctx.rt, ctx.actor, input))),
} satisfies TRPCRouterRecord;
