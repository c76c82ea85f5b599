/**
 * How deep JSON text nests, read before it is parsed: the platform's `JSON.parse` takes 0.3-0.5 us a level, so 1 MiB
 * of `[` (half a million levels) held a host's thread 110-190 ms where 1 MiB of flat JSON takes 5-10 ms, and nothing
 * deeper than a few thousand levels is taken anyway (values nest at most `MAX_WALK_DEPTH` levels, their wire encoding
 * a few times that). The text is read as it arrives, in pieces, as characters or as UTF-8 bytes alike: brackets,
 * quotes and backslashes are ASCII, and no byte of a longer UTF-8 sequence is ASCII.
 * @module
 */

/** Levels of arrays and objects JSON text the hosts read may nest: four times a value's, for its wire encoding. */
export const MAX_JSON_TEXT_DEPTH = 4096;

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const NEWLINE = 0x0a;

/** The nesting of JSON text read a piece at a time; `within` turns false for good once it passed `maxDepth`. */
export class JsonNesting {
  readonly maxDepth: number;
  #depth = 0;
  #inString = false;
  #escaped = false;
  #within = true;

  constructor(maxDepth = MAX_JSON_TEXT_DEPTH) {
    this.maxDepth = maxDepth;
  }

  get within(): boolean {
    return this.#within;
  }

  /**
   * Reads the next piece of the text (a string's characters or UTF-8 bytes); returns {@link within}. A line break
   * ends a string, as no JSON string holds a raw one, so one malformed line of a stream of JSON lines (an event stream's
   * `data:`) cannot hide the brackets of the next.
   */
  read(piece: string | Uint8Array): boolean {
    if (!this.#within) return false;
    const text = typeof piece === "string";
    let depth = this.#depth;
    let inString = this.#inString;
    let escaped = this.#escaped;
    for (let i = 0; i < piece.length; i++) {
      const unit = text ? piece.charCodeAt(i) : (piece[i] as number);
      if (inString) {
        if (escaped) escaped = false;
        else if (unit === BACKSLASH) escaped = true;
        else if (unit === QUOTE || unit === NEWLINE) inString = false;
      } else if (unit === QUOTE) inString = true;
      else if (unit === 0x5b || unit === 0x7b) {
        if (++depth > this.maxDepth) {
          this.#within = false;
          return false;
        }
      } else if ((unit === 0x5d || unit === 0x7d) && depth > 0) depth--;
    }
    this.#depth = depth;
    this.#inString = inString;
    this.#escaped = escaped;
    return true;
  }
}

/** Whether `text` nests at most `maxDepth` levels of arrays and objects. */
export const nestsWithin = (text: string, maxDepth = MAX_JSON_TEXT_DEPTH): boolean =>
  new JsonNesting(maxDepth).read(text);
