// Types of test-failures.mjs (plain ESM, imported by scripts/test.mjs before anything is built).
export interface TestFailure {
  name: string;
  location: string;
  error: string;
}
export function tapFailures(text: string): TestFailure[];
export function tapSummary(text: string): { pass: number; fail: number; cancelled: number } | null;
export function playwrightFailures(report: unknown): TestFailure[];
export function playwrightSummary(report: unknown): { passed: number; failed: number; tests: number } | null;
export function formatFailures(failures: readonly TestFailure[]): string;
