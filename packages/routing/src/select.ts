// One entry point for every routing policy: createPolicy(name, options).select(request, candidates, ctx).

import { RoutingInputError, describe } from "./errors";
import type { Policy, PolicyOptions } from "./policies/common";
import { createGorgoPolicy } from "./policies/gorgo";
import { createConsistentHashPolicy, createSessionAffinityPolicy } from "./policies/hashing";
import { createLearnedPrefixPolicy } from "./policies/learned-prefix";
import { createLeastLoadPolicy, createLeastRequestPolicy } from "./policies/load";
import { createPrefixCachePolicy } from "./policies/prefix-cache";
import { createRandomPolicy, createRoundRobinPolicy } from "./policies/simple";
import { createSkyLbPolicy } from "./policies/skylb";
import { createDynamoKvPolicy } from "./policies/dynamo-kv";
import { createLlmdPolicy } from "./policies/llm-d";
import { createSglangCacheAwarePolicy } from "./policies/sglang-cache-aware";
import { POLICY_NAMES, type PolicyName } from "./types";

export type { Policy, PolicyContext, PolicyEvent, PolicyOptions } from "./policies/common";
export type { DynamoKvOptions, LlmdOptions, SglangCacheAwareOptions } from "./policies/peer-options";

export function isPolicyName(name: unknown): name is PolicyName {
  return typeof name === "string" && (POLICY_NAMES as readonly string[]).includes(name);
}

/** Whether the policy's decisions depend on the cost weights (`Policy.usesCostWeights`): the tuner runs only then. */
export function policyUsesCostWeights(name: PolicyName): boolean {
  return createPolicy(name).usesCostWeights;
}

/** A fresh policy instance. Instances may hold state (round-robin turn, ring cache, a peer router's
 * own prefix tree and load books): create one per LB, and feed `observe` where a policy has it. */
export function createPolicy(name: PolicyName, options: PolicyOptions = {}): Policy {
  switch (name) {
    case "gorgo":
      return createGorgoPolicy();
    case "least-load":
      return createLeastLoadPolicy();
    case "least-request":
      return createLeastRequestPolicy();
    case "prefix-cache":
      return createPrefixCachePolicy(options);
    case "session-affinity":
      return createSessionAffinityPolicy();
    case "consistent-hash":
      return createConsistentHashPolicy(options);
    case "round-robin":
      return createRoundRobinPolicy();
    case "random":
      return createRandomPolicy();
    case "skylb":
      return createSkyLbPolicy();
    case "learned-prefix":
      return createLearnedPrefixPolicy(options);
    case "sglang-cache-aware":
      return createSglangCacheAwarePolicy(options.sglang);
    case "llm-d":
      return createLlmdPolicy(options.llmd);
    case "dynamo-kv":
      return createDynamoKvPolicy(options.dynamo);
    default:
      throw new RoutingInputError("policy", `unknown policy ${describe(name)}; expected one of ${POLICY_NAMES.join(", ")}`);
  }
}
