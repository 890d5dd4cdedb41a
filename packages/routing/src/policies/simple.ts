// Stateless-ish baselines: round-robin (counter kept in the policy instance) and random.

import { randomInt } from "../rng";
import { type Policy, decidePicked, eligibleIndices, prepare } from "./common";

export function createRoundRobinPolicy(): Policy {
  let turn = 0;
  return {
    name: "round-robin",
    usesCostWeights: false,
    select(request, candidates, ctx) {
      const p = prepare(request, candidates, ctx);
      const eligible = eligibleIndices(p);
      const choice = eligible[turn % eligible.length] as number;
      turn = (turn + 1) % 0x40000000;
      return decidePicked(p, choice);
    },
  };
}

export function createRandomPolicy(): Policy {
  return {
    name: "random",
    usesCostWeights: false,
    select(request, candidates, ctx) {
      const p = prepare(request, candidates, ctx);
      const eligible = eligibleIndices(p);
      const choice = eligible[randomInt(ctx.rng, eligible.length)] as number;
      return decidePicked(p, choice);
    },
  };
}
