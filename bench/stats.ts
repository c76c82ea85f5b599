/** Small statistics and printing helpers shared by the benchmarks. */
import { loadavg } from "node:os";

export interface Summary {
  label: string;
  p50: number;
  p99: number;
  perSecond: number;
}

/** Times `fn` `count` times; returns per-call milliseconds. */
export async function sample(count: number, fn: (i: number) => unknown): Promise<number[]> {
  const times: number[] = [];
  for (let i = 0; i < count; i++) {
    const start = performance.now();
    await fn(i);
    times.push(performance.now() - start);
  }
  return times;
}

/** The load average over 1, 5 and 15 minutes: these machines are shared, so every figure is printed beside it. */
export function loadAverage(): string {
  return loadavg()
    .map((n) => n.toFixed(2))
    .join(" ");
}

/** A case of a bench: its label in the table, how many runs a round, the run (given its number among the case's). */
export interface Case {
  label: string;
  runs: number;
  run: (i: number) => unknown;
}

/**
 * Times every case for `rounds` rounds, interleaved (each case's runs in turn, round by round, so that the machine's
 * load falls on all of them alike), after `warmUp` runs of each (its runs a round unless given); each case's summary.
 */
export async function interleave(cases: Case[], rounds: number, warmUp?: number): Promise<Map<Case, Summary>> {
  for (const { runs, run } of cases) for (let i = 0; i < (warmUp ?? runs); i++) await run(i);
  const times = new Map<Case, number[]>(cases.map((c) => [c, []]));
  for (let round = 0; round < rounds; round++)
    for (const c of cases) times.get(c)?.push(...(await sample(c.runs, (i) => c.run(round * c.runs + i))));
  return new Map(cases.map((c) => [c, summarize(c.label, times.get(c) ?? [])]));
}

export function summarize(label: string, times: number[]): Summary {
  const sorted = [...times].sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? Number.NaN;
  const total = times.reduce((a, b) => a + b, 0);
  return { label, p50: at(0.5), p99: at(0.99), perSecond: (1000 * times.length) / total };
}

export function printTable(rows: Summary[]): void {
  const width = Math.max(44, ...rows.map((r) => r.label.length));
  console.log(`${"case".padEnd(width)} ${"p50 ms".padStart(8)} ${"p99 ms".padStart(8)} ${"runs/s".padStart(8)}`);
  for (const r of rows) {
    console.log(
      `${r.label.padEnd(width)} ${r.p50.toFixed(3).padStart(8)} ${r.p99.toFixed(3).padStart(8)} ${r.perSecond.toFixed(0).padStart(8)}`,
    );
  }
}

export function ratio(label: string, value: Summary, base: Summary, target?: string): void {
  const r = value.p50 / base.p50;
  console.log(`${label.padEnd(60)} ${r.toFixed(2)}x${target === undefined ? "" : `  (target ${target})`}`);
}

/** A target: the measured figure at most, at least, or below a bound. */
export type Target = { atMost: number } | { atLeast: number } | { below: number };

/**
 * One line of a verdict block: `measured` (a ratio of p50s, or milliseconds with `unit: " ms"`) beside its target,
 * met or missed, and a note (what it was measured against).
 */
export function verdict(label: string, measured: number, target: Target, unit = "x", note = ""): void {
  // Judged as printed: a figure shown as 1.25x meets "<= 1.25x".
  const shown = Number(measured.toFixed(2));
  const [sign, bound, met] =
    "atMost" in target
      ? ["<=", target.atMost, shown <= target.atMost]
      : "atLeast" in target
        ? [">=", target.atLeast, shown >= target.atLeast]
        : ["<", target.below, shown < target.below];
  const figure = `${shown.toFixed(2)}${unit}`;
  const goal = `${sign} ${bound}${unit}`;
  console.log(
    `${label.padEnd(64)} ${figure.padStart(10)}  target ${goal.padEnd(10)} ${met ? "met" : "MISSED"}${note && `  (${note})`}`,
  );
}
