// An LB's routing settings as the console stores them: its `probes`, `index` and `sessionKeyBlocks`
// (LbConfig), only those an operator set or the console adopted from the LB, as JSON on
// load_balancers.routing_settings_json. A field left out is the protocol's default, as for the
// limits (lbs-limits.ts), whose rules these follow: the protocol's own schemas, strict, only the
// fields set stored, adopted once with the limits (runtime/lb-settings-adoption.ts).
// Why a column of their own rather than more keys in limits_json: an operator's edit replaces one
// section as a whole ("{}" puts every limit back to its default), and the limits editor sends only
// the limits; with one JSON for both, it would wipe the routing settings it never showed.
import "server-only";
import { z } from "zod";
import {
  DEFAULT_INDEX,
  DEFAULT_PROBES,
  DEFAULT_SESSION_KEY_BLOCKS,
  type IndexSettings,
  IndexSettingsSchema,
  type LbConfig,
  LbConfigSchema,
  type Probes,
  ProbesSchema,
} from "@meridian/protocol";
import { differencesFrom, fieldsSet, requireParsed } from "./lbs-limits";

export interface RoutingSettingsSet {
  probes?: Partial<Probes>;
  index?: Partial<IndexSettings>;
  sessionKeyBlocks?: number;
}

/** What an operator sets (lbs.create / lbs.update `routingSettings`), each field bounded as the LB
 * bounds it. A section left out is at its defaults. */
export const routingSettingsInput = z.strictObject({
  probes: fieldsSet<Probes>(ProbesSchema).optional(),
  index: fieldsSet<IndexSettings>(IndexSettingsSchema).optional(),
  sessionKeyBlocks: LbConfigSchema.shape.sessionKeyBlocks.removeDefault().optional(),
}) as z.ZodType<RoutingSettingsSet>;

/** The stored JSON (null: nothing stored) as the settings set; a stored value the schema refuses
 * throws, so a bad row fails the config build loudly instead of pushing the defaults. */
export function storedRoutingSettings(json: string | null): RoutingSettingsSet {
  return json === null ? {} : routingSettingsInput.parse(JSON.parse(json));
}

/** `set` with an empty section dropped (it is the defaults either way), in one order: what is
 * stored, audited and shown, so "{probes: {}}" and "{}" are not two different settings. */
function canonical(set: RoutingSettingsSet): RoutingSettingsSet {
  const nonEmpty = <T extends object>(section: T | undefined) => section !== undefined && Object.keys(section).length > 0;
  return {
    ...(nonEmpty(set.probes) ? { probes: set.probes } : {}),
    ...(nonEmpty(set.index) ? { index: set.index } : {}),
    ...(set.sessionKeyBlocks !== undefined ? { sessionKeyBlocks: set.sessionKeyBlocks } : {}),
  };
}

/** What the console stores for `set`. */
export function routingSettingsJson(set: RoutingSettingsSet): string {
  return JSON.stringify(canonical(set));
}

/** The JSON the console stores for the routing settings an operator gave, checked by the protocol's
 * bounds (a service called without the router is held to them too). A bad value is a 400 naming it
 * ("routingSettings.probes.rttIntervalMs: ..."). */
export function requireRoutingSettings(settings: unknown): string {
  return routingSettingsJson(requireParsed(routingSettingsInput, settings, "routingSettings"));
}

/** The routing settings of `running` that differ from the protocol's defaults: what adopting them stores. */
export function routingDifferencesFromDefaults(running: LbConfig): RoutingSettingsSet {
  return canonical({
    probes: differencesFrom(running.probes, DEFAULT_PROBES),
    index: differencesFrom(running.index, DEFAULT_INDEX),
    ...(running.sessionKeyBlocks !== DEFAULT_SESSION_KEY_BLOCKS ? { sessionKeyBlocks: running.sessionKeyBlocks } : {}),
  });
}

export interface RoutingSettingsView {
  /** The fields stored for the LB (the rest are defaults). */
  set: RoutingSettingsSet;
  /** False while the console stores nothing (neither set nor adopted yet). */
  stored: boolean;
  /** The protocol's defaults, which the fields not set take. */
  defaults: { probes: Probes; index: IndexSettings; sessionKeyBlocks: number };
}

export function routingSettingsView(json: string | null): RoutingSettingsView {
  return {
    set: canonical(storedRoutingSettings(json)),
    stored: json !== null,
    defaults: { probes: { ...DEFAULT_PROBES }, index: { ...DEFAULT_INDEX }, sessionKeyBlocks: DEFAULT_SESSION_KEY_BLOCKS },
  };
}
