// Stateless-ish baselines: round-robin (counter kept in the policy instance) and random.

import { randomInt } from "../rng";
import { type Policy, decide, prepare } from "./common";

export function createRoundRobinPolicy(): Policy {
  let turn = 0;
  return {
    name: "round-robin",
    usesCostWeights: false,
    select(request, candidates, ctx) {
      const p = prepare(request, candidates, ctx);
      const eligible: number[] = [];
      for (let i = 0; i < candidates.length; i++) if (p.eligible[i]) eligible.push(i);
      const choice = eligible[turn % eligible.length] as number;
      turn = (turn + 1) % 0x40000000;
      return decide(
        p,
        candidates.map((_, i) => (i === choice ? 0 : 1)),
        choice,
      );
    },
  };
}

export function createRandomPolicy(): Policy {
  return {
    name: "random",
    usesCostWeights: false,
    select(request, candidates, ctx) {
      const p = prepare(request, candidates, ctx);
      const eligible: number[] = [];
      for (let i = 0; i < candidates.length; i++) if (p.eligible[i]) eligible.push(i);
      const choice = eligible[randomInt(ctx.rng, eligible.length)] as number;
      return decide(
        p,
        candidates.map((_, i) => (i === choice ? 0 : 1)),
        choice,
      );
    },
  };
}
