/** Server-Sent Events as the tests read them. */

/** An SSE text's events as `[event, data]` pairs, each `data` parsed as JSON. */
export function sseEvents(text: string): [string, Record<string, unknown>][] {
  return text
    .split("\n\n")
    .filter((block) => block !== "")
    .map((block): [string, Record<string, unknown>] => {
      const [event, data] = block.split("\n") as [string, string];
      return [event.slice("event: ".length), JSON.parse(data.slice("data: ".length)) as Record<string, unknown>];
    });
}
