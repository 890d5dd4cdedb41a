// Types of test-failures.mjs (plain ESM, imported by scripts/test.mjs before anything is built).
export interface TestFailure {
  name: string;
  location: string;
  error: string;
}
export function tapFailures(text: string): TestFailure[];
export function playwrightFailures(report: unknown): TestFailure[];
export function formatFailures(failures: readonly TestFailure[]): string;
