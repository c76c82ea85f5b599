/** Interim: replaced by the cell-source branch. */
export interface CellScript {
  script: string;
  specifiers: string[];
}
export class CellSyntaxError extends Error {
  constructor(
    message: string,
    readonly line: number,
    readonly column: number,
  ) {
    super(message);
    this.name = "SyntaxError";
  }
}
export const CELL_HELPER_KEY = "runcode:cell";
export const CELL_HELPER_SOURCE = "({ __proto__: null })";
export function cellScript(source: string): CellScript {
  return { script: source, specifiers: [] };
}
