// Two regions whose LBs forward to each other (via-peer, the SkyLB policy), each over one slow
// engine, and a way to fill an LB's replica so that its next request goes to the peer.
import type { LbConfigInput, LbState } from "@meridian/protocol";
import type { RunningProxy } from "../src/index";
import { adminGet, chatBody, DEMO_ENGINE_PARAMS, type Engine, lbConfig, post, startEngine, startPeeredPair, waitFor } from "./helpers";

// One request at a time, ~1.6 s each, so "full" lasts long enough to observe on a loaded machine.
const ONE_AT_A_TIME = { ...DEMO_ENGINE_PARAMS, maxRunning: 1, itlBaseMs: 20, maxOutputTokens: 80 };

export interface ViaPeerRegions {
  /** lb-us in us-ashburn over replica us-1. */
  lbUs: RunningProxy;
  /** lb-eu in eu-frankfurt over replica eu-1. */
  lbEu: RunningProxy;
  close(): Promise<void>;
}

/** Starts both regions, peered and polling each other; `eu` adds to lb-eu's config. */
export async function startViaPeerRegions(eu: Partial<LbConfigInput> = {}): Promise<ViaPeerRegions> {
  const engines: Engine[] = [];
  const closeEngines = async () => {
    for (const engine of engines) await engine.close();
  };
  try {
    const usEngine = await startEngine("us-1", "us-ashburn", { params: ONE_AT_A_TIME });
    engines.push(usEngine);
    const euEngine = await startEngine("eu-1", "eu-frankfurt", { params: ONE_AT_A_TIME });
    engines.push(euEngine);
    const usConfig = lbConfig("lb-us", "us-ashburn", [usEngine], { crossRegion: "via-peer", policy: "skylb" });
    const euConfig = lbConfig("lb-eu", "eu-frankfurt", [euEngine], { crossRegion: "via-peer", policy: "skylb", ...eu });
    const [lbUs, lbEu] = await startPeeredPair(usConfig, euConfig);
    const close = async () => {
      await lbUs.close();
      await lbEu.close();
      await closeEngines();
    };
    return { lbUs, lbEu, close };
  } catch (error) {
    await closeEngines();
    throw error;
  }
}

/** Sends the LB's one-request-at-a-time replica a request to run and one to wait, and returns
 * (their replies pending) once the LB reports every replica full. */
export async function fillReplicas(lb: RunningProxy, tag: string): Promise<Promise<unknown>[]> {
  const pending = [
    post(`${lb.url}/v1/chat/completions`, chatBody(`${tag} running`, { max_tokens: 80 })),
    post(`${lb.url}/v1/chat/completions`, chatBody(`${tag} waiting`, { max_tokens: 80 })),
  ];
  await waitFor(`${tag} replica full`, async () => {
    const state = await adminGet<LbState>(lb, "/admin/state");
    return state.replicas.every((r) => r.full) ? true : undefined;
  });
  return pending;
}
