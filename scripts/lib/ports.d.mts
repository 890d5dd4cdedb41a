// Types of ports.mjs (plain ESM so that scripts/start.mjs can use it before any dependency is installed).
export function readPortEnv(env: NodeJS.ProcessEnv, name: string, fallback: number, max?: number): number;
export function portIsFree(host: string, port: number): Promise<boolean>;
