/** examples/openai-tool-loop.ts against a stub model: tool calls answered from real runs, then the model's words. */
import { describe, expect, it } from "vitest";
import {
  type ChatMessage,
  type Complete,
  chatWithRunCode,
  RUN_CODE_FUNCTION,
  type ToolCall,
} from "../../examples/openai-tool-loop.js";

/** A model that answers each turn from the conversation so far, as a scripted list. */
function stubModel(turns: ((messages: ChatMessage[]) => ChatMessage)[]): Complete & { requests: number } {
  const complete = async ({ messages, tools }: Parameters<Complete>[0]) => {
    expect(tools).toEqual([RUN_CODE_FUNCTION]);
    const turn = turns[complete.requests++];
    if (turn === undefined) throw new Error("the stub model has no more turns");
    return { choices: [{ message: turn(messages) }] };
  };
  complete.requests = 0;
  return complete;
}
const callRunCode = (id: string, code: string): ChatMessage => ({
  role: "assistant",
  content: null,
  tool_calls: [{ id, type: "function", function: { name: "run_code", arguments: JSON.stringify({ code }) } }],
});
const lastToolAnswer = (messages: ChatMessage[]) => {
  const last = messages.at(-1);
  if (last?.role !== "tool") throw new Error("expected a tool answer last");
  return JSON.parse(last.content) as Record<string, unknown>;
};

describe("examples/openai-tool-loop.ts", () => {
  it("answers a script's tool call with its logs, then returns the model's final words", async () => {
    const model = stubModel([
      () => callRunCode("call_1", "const xs: number[] = [1, 2, 3];\nconsole.log('sum', xs.reduce((a, b) => a + b));"),
      (messages) => ({ role: "assistant", content: `It printed: ${lastToolAnswer(messages).logs}` }),
    ]);
    const { answer, messages } = await chatWithRunCode(model, [{ role: "user", content: "Add 1, 2 and 3." }]);
    expect(answer).toBe("It printed: sum 6");
    expect(messages.slice(2)).toEqual([
      { role: "tool", tool_call_id: "call_1", content: JSON.stringify({ status: "success", logs: ["sum 6"] }) },
      { role: "assistant", content: "It printed: sum 6" },
    ]);
  });

  it("hands an error with its line back so the model can fix its code; a default export is the result", async () => {
    const model = stubModel([
      () => callRunCode("call_1", "const a = 1;\nconst b = a.missing.field;"),
      () => callRunCode("call_2", "export default new Map([['big', 2n ** 64n]]);"),
      () => ({ role: "assistant", content: "Done." }),
    ]);
    const { messages } = await chatWithRunCode(model, [{ role: "user", content: "Try." }]);
    const answers = messages.filter((m) => m.role === "tool").map((m) => JSON.parse(m.content));
    expect(answers).toEqual([
      { status: "error", logs: [], error: "TypeError: cannot read property 'field' of undefined (line 2)" },
      { status: "success", result: { $t: "map", v: [["big", { $t: "bigint", v: "18446744073709551616" }]] }, logs: [] },
    ]);
  });

  it("answers calls it cannot take so the model can correct them, and stops a runaway program", async () => {
    const calls: ToolCall[] = [
      { id: "a", type: "function", function: { name: "shell", arguments: "{}" } },
      { id: "b", type: "function", function: { name: "run_code", arguments: "{code:" } },
      { id: "c", type: "function", function: { name: "run_code", arguments: "null" } },
      { id: "d", type: "function", function: { name: "run_code", arguments: '{"code":"for (;;) {}"}' } },
    ];
    const model = stubModel([
      () => ({ role: "assistant", content: null, tool_calls: calls }),
      () => ({ role: "assistant", content: "ok" }),
    ]);
    const { messages } = await chatWithRunCode(model, [{ role: "user", content: "Go." }], { timeoutMs: 200 });
    const answers = messages.filter((m) => m.role === "tool").map((m) => [m.tool_call_id, JSON.parse(m.content)]);
    expect(answers).toEqual([
      ["a", { error: "No tool named 'shell'" }],
      ["b", { error: expect.stringMatching(/^The arguments are not JSON: /) }],
      ["c", { error: "The arguments must be { code: string }" }],
      ["d", { status: "terminated", logs: [], error: "TerminatedError: the 200 ms budget ran out" }],
    ]);
  });

  it("gives up after maxTurns of tool calls", async () => {
    const model = stubModel(Array.from({ length: 2 }, (_, i) => () => callRunCode(`call_${i}`, "console.log(1)")));
    await expect(chatWithRunCode(model, [{ role: "user", content: "Loop." }], { maxTurns: 2 })).rejects.toThrow(
      "The model still called tools after 2 turns",
    );
  });
});
