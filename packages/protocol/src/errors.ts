import { z } from "zod";

/** One problem found in a wire object, with the dotted path of the offending field. */
export interface ProtocolIssue {
  /** e.g. `lbConfig.replicas[0].url` */
  path: string;
  message: string;
}

/** Thrown by every `parseX` function. The message names each offending field, so an operator reading
 * a log line or a 400 response knows what to fix without the schema at hand. */
export class ProtocolError extends Error {
  readonly issues: readonly ProtocolIssue[];
  constructor(issues: readonly ProtocolIssue[]) {
    super(formatIssues(issues));
    this.name = "ProtocolError";
    this.issues = issues;
  }
}

export type SafeParseResult<T> = { success: true; data: T } | { success: false; error: ProtocolError };

// Enough to fix a config in one round without flooding a log line.
const MAX_ISSUES_IN_MESSAGE = 5;

function formatIssues(issues: readonly ProtocolIssue[]): string {
  const shown = issues.slice(0, MAX_ISSUES_IN_MESSAGE).map((issue) => `${issue.path}: ${issue.message}`);
  const hidden = issues.length - shown.length;
  return hidden > 0 ? `${shown.join("; ")} (and ${hidden} more)` : shown.join("; ");
}

function formatPath(root: string, path: readonly PropertyKey[]): string {
  let out = root;
  for (const segment of path) {
    if (typeof segment === "number") out += `[${segment}]`;
    else out += `.${String(segment)}`;
  }
  return out;
}

/** Marker put on the schema-tag error so the formatter can tell "wrong version" from ordinary issues. */
const UNKNOWN_VERSION = "unknown version";

function toProtocolIssues(root: string, issues: readonly z.core.$ZodIssue[]): ProtocolIssue[] {
  const converted = issues.flatMap((issue): ProtocolIssue[] => {
    // Name each unknown key as a field of its own, so a typo points at itself.
    if (issue.code === "unrecognized_keys") {
      return issue.keys.map((key) => ({ path: formatPath(root, [...issue.path, key]), message: "unknown field" }));
    }
    // zod prefixes messages with "Invalid input: " / "Invalid option: ", which adds nothing once the field is named.
    return [{ path: formatPath(root, issue.path), message: issue.message.replace(/^Invalid (input|option): /, "") }];
  });
  // A document of another schema version has a different shape, so every other issue would be noise:
  // report only the version mismatch.
  const versionIssues = converted.filter((issue) => issue.message.startsWith(UNKNOWN_VERSION) || issue.message.startsWith("missing schema tag"));
  return versionIssues.length > 0 ? versionIssues : converted;
}

/**
 * The literal schema-version field every wire object carries, e.g. `schema: "meridian.lb-config/1"`.
 * A tag of the same family with another version reads `unknown version "meridian.lb-config/9"`.
 */
export function schemaTag<const Tag extends string>(tag: Tag) {
  const family = tag.slice(0, tag.lastIndexOf("/") + 1);
  return z.literal(tag, {
    error: (issue) => {
      const received = issue.input;
      if (received === undefined) return `missing schema tag; expected "${tag}"`;
      if (typeof received === "string" && received.startsWith(family)) {
        return `${UNKNOWN_VERSION} "${received}" (this build reads "${tag}")`;
      }
      return `expected "${tag}", received ${JSON.stringify(received) ?? String(received)}`;
    },
  });
}

/** Builds the `parseX` / `safeParseX` pair for a schema; `root` names the object in error paths. */
export function makeParsers<Schema extends z.ZodType>(schema: Schema, root: string) {
  type Output = z.output<Schema>;
  const safeParse = (input: unknown): SafeParseResult<Output> => {
    const result = schema.safeParse(input);
    if (result.success) return { success: true, data: result.data };
    return { success: false, error: new ProtocolError(toProtocolIssues(root, result.error.issues)) };
  };
  const parse = (input: unknown): Output => {
    const result = safeParse(input);
    if (!result.success) throw result.error;
    return result.data;
  };
  return { parse, safeParse };
}
