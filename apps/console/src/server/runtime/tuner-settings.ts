// The operator-tunable settings of an LB's tuner, as stored in tuner_runs.settings_json, and their
// mapping to and from the tuner's own config.
import "server-only";
import { TunerInputError, type EvaluationMode, type TunerConfig, type TunerConfigInput } from "@meridian/tuner";
import { invalid } from "../errors";

export interface TunerSettings {
  bounds: { rtt: [number, number]; queue: [number, number] };
  /** `ab`: concurrent A/B trials (default). `paper`: GORGO's trailing windows. */
  evaluation: EvaluationMode;
  /** Paper mode: samples per window and the hop between evaluations. */
  window: number;
  hop: number;
  /** A/B mode: the candidate arm's share of sessions, samples between looks, the sample cap. */
  trial: { share: number; lookEvery: number; maxSamples: number };
  guardrails: { enabled: boolean; e2eRatio: number; maxShare: number; maxErrorRate: number };
}

/** A patch an operator (or the demo seed) sends: every field optional, nested ones field by field. */
export type TunerSettingsPatch = Partial<Omit<TunerSettings, "trial" | "guardrails">> & {
  trial?: Partial<TunerSettings["trial"]>;
  guardrails?: Partial<TunerSettings["guardrails"]>;
};

export function settingsOf(config: TunerConfig): TunerSettings {
  return {
    bounds: { rtt: [config.bounds.rtt[0], config.bounds.rtt[1]], queue: [config.bounds.queue[0], config.bounds.queue[1]] },
    evaluation: config.evaluation,
    window: config.window,
    hop: config.hop,
    trial: { share: config.trial.share, lookEvery: config.trial.lookEvery, maxSamples: config.trial.maxSamples },
    guardrails: {
      enabled: config.guardrails.enabled,
      e2eRatio: config.guardrails.e2eTolerance,
      maxShare: config.guardrails.maxShare,
      maxErrorRate: config.guardrails.maxErrorRate,
    },
  };
}

/** The tuner config fields the settings set (bounds only when given: changing them goes through setBounds). */
export function configPatch(settings: TunerSettings, current?: TunerConfig): Omit<TunerConfigInput, "seed"> {
  return {
    bounds: settings.bounds,
    window: settings.window,
    hop: settings.hop,
    evaluation: settings.evaluation,
    trial: { ...(current?.trial ?? {}), ...settings.trial },
    guardrails: {
      enabled: settings.guardrails.enabled,
      e2eTolerance: settings.guardrails.e2eRatio,
      maxShare: settings.guardrails.maxShare,
      maxErrorRate: settings.guardrails.maxErrorRate,
    },
  };
}

export function mergeSettings(current: TunerSettings, patch: TunerSettingsPatch): TunerSettings {
  return {
    ...current,
    ...patch,
    trial: { ...current.trial, ...(patch.trial ?? {}) },
    guardrails: { ...current.guardrails, ...(patch.guardrails ?? {}) },
  } as TunerSettings;
}

/** Tuner input errors become domain errors with the tuner's own field-naming message. */
export function guard<T>(fn: () => T): T {
  try {
    return fn();
  } catch (error) {
    if (error instanceof TunerInputError) throw invalid(error.message);
    throw error;
  }
}
