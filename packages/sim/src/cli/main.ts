// meridian-sim: the fleet simulator's command line. A stable contract: the console runs `compare`
// and reads its --json stdout and the `progress N/M` lines on stderr. See packages/sim/README.md.
//
// Exit codes: 0 ok, 2 usage or input error (missing file, bad window, unknown policy, bad weights,
// malformed trace row), 1 anything unexpected.

import { COMPARE_POLICY_NAMES, INDEX_MODES, presetNames } from "../fleet";
import { FlagReader, parseArgv, UsageError } from "./args";
import { runCompare } from "./commands/compare";
import { runGrid } from "./commands/grid";
import { runSweep } from "./commands/sweep";
import { runTune } from "./commands/tune";

const USAGE = `meridian-sim: discrete-event simulator of a Meridian fleet

Usage:
  meridian-sim compare --trace FILE|bundled [common] [--policies a,b,...] [--weights rtt=0.5,queue=0.1]
                       [tuner] [--jsonl FILE] [--oracle-gap on|off]
  meridian-sim tune    --trace FILE|bundled [common] [tuner] [--weights rtt=..,queue=..]
  meridian-sim sweep   --trace FILE|bundled --time-scales 1,2,3 [common] [--policies a,b,...]
                       [--saturation-e2e-p95-ms MS]
  meridian-sim grid    --trace FILE|bundled [common] [--rtt-bounds LO,HI] [--queue-bounds LO,HI] [--points N]
                       [--weights rtt=..,queue=..]   (the defaults to place on the landscape)

Tuner:  [--mode ab|paper] [--tuner-scope lb|fleet] [--guardrails on|off] [--rtt-bounds LO,HI] [--queue-bounds LO,HI]
        [--window N] [--hop N]   (paper mode)
Common: [--from-ms A --to-ms B] [--time-scale S|busy] [--preset ${presetNames().join("|")}] [--seed N]
        [--max-input-tokens N] [--spread-ticks] [--prompt-factor F] [--index ${INDEX_MODES.join("|")}]
        [--shift-clients REGION=W,... [--shift-at FRACTION]] [--json] [--quiet]

--time-scale busy: the heaviest load at which default gorgo still clears (packages/sim/README.md).
--prompt-factor 0.05: every prompt 1/20 as long, at least one block (the short-prompt regime).
--index: how the LBs know what the engines cache. learned (default): their prefix indexes, sized
from the engines' KV capacity and corrected by cached-token reports; static: TTL and capacity only
(the index before it learned); oracle: the engines' true cache state at dispatch (an upper bound).
compare also runs each policy with the oracle and reports the TTFT gap to it (--oracle-gap off skips).
--shift-clients: from FRACTION (default 0.5) of the workload's span on, clients come from the regions in these proportions.

Policies: ${COMPARE_POLICY_NAMES.join(", ")} (gorgo-online = gorgo with the online tuner).
Progress goes to stderr as lines "progress DONE/TOTAL LABEL" (suppressed by --quiet).`;

export async function main(argv: readonly string[]): Promise<number> {
  try {
    const raw = parseArgv(argv);
    const flags = new FlagReader(raw.flags);
    if (raw.command === undefined || raw.command === "help" || flags.bool("help")) {
      console.log(USAGE);
      return raw.command === undefined && !flags.bool("help") ? 2 : 0;
    }
    if (raw.positionals.length > 0) throw new UsageError(`unexpected argument "${raw.positionals[0]}"`);
    switch (raw.command) {
      case "compare":
        await runCompare(flags);
        break;
      case "tune":
        await runTune(flags);
        break;
      case "sweep":
        await runSweep(flags);
        break;
      case "grid":
        await runGrid(flags);
        break;
      default:
        throw new UsageError(`unknown command "${raw.command}" (expected compare, tune, sweep or grid)`);
    }
    return 0;
  } catch (error) {
    if (error instanceof UsageError) {
      process.stderr.write(`meridian-sim: error: ${error.message}\n`);
      return 2;
    }
    process.stderr.write(`meridian-sim: unexpected error: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    return 1;
  }
}

// Run when executed (through bin/meridian-sim.mjs or `tsx src/cli/main.ts`), not when imported by tests.
const invokedDirectly = process.argv[1] !== undefined && /meridian-sim(\.mjs)?$|cli[\\/]main\.ts$/.test(process.argv[1]);
if (invokedDirectly) {
  process.exitCode = await main(process.argv.slice(2));
}
