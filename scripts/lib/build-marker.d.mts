// Types of build-marker.mjs (plain ESM so that start.mjs can use it before any dependency is installed).
export function sourceFingerprint(sources: readonly string[]): string;
export function buildIsCurrent(nextDir: string, fingerprint: string): boolean;
export function clearBuildMarker(nextDir: string): void;
export function writeBuildMarker(nextDir: string, fingerprint: string): void;
