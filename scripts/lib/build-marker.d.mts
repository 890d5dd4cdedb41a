// Types of build-marker.mjs (plain ESM so that start.mjs can use it before any dependency is installed).
export function buildIsCurrent(nextDir: string, sources: readonly string[]): boolean;
export function clearBuildMarker(nextDir: string): void;
export function writeBuildMarker(nextDir: string, startedAt: number): void;
