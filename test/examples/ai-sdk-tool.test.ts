/** examples/ai-sdk-tool.ts in the AI SDK's own loop, against its stub model (`ai/test`): no network. */
import { generateText, stepCountIs } from "ai";
import { MockLanguageModelV3 } from "ai/test";
import { describe, expect, it } from "vitest";
import { runCodeTool } from "../../examples/ai-sdk-tool.js";

type GenerateResult = Awaited<ReturnType<MockLanguageModelV3["doGenerate"]>>;

const usage = {
  inputTokens: { total: 1, noCache: 1, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 1, text: 1, reasoning: undefined },
};
const callsRunCode = (code: string): GenerateResult => ({
  content: [{ type: "tool-call", toolCallId: "call-1", toolName: "run_code", input: JSON.stringify({ code }) }],
  finishReason: { unified: "tool-calls", raw: undefined },
  usage,
  warnings: [],
});
const says = (text: string): GenerateResult => ({
  content: [{ type: "text", text }],
  finishReason: { unified: "stop", raw: undefined },
  usage,
  warnings: [],
});

describe("examples/ai-sdk-tool.ts", () => {
  it("runs the model's program and hands the model its answer before the final text", async () => {
    const model = new MockLanguageModelV3({
      doGenerate: [
        callsRunCode(
          "const fib = (n: number): number => (n < 2 ? n : fib(n - 1) + fib(n - 2));\nconsole.log('fib', 20);\nexport default fib(20);",
        ),
        says("fib(20) is 6765."),
      ],
    });
    const result = await generateText({
      model,
      tools: { run_code: runCodeTool() },
      stopWhen: stepCountIs(3),
      prompt: "What is fib(20)?",
    });
    expect(result.text).toBe("fib(20) is 6765.");
    expect(result.steps[0]?.toolResults.map((r) => [r.toolName, r.input, r.output])).toEqual([
      ["run_code", { code: expect.stringContaining("fib(20)") }, { status: "success", result: 6765, logs: ["fib 20"] }],
    ]);
    // The second request carried the tool's answer to the model.
    const toolMessage = model.doGenerateCalls[1]?.prompt.find((message) => message.role === "tool");
    expect(toolMessage?.content).toEqual([
      expect.objectContaining({
        type: "tool-result",
        toolCallId: "call-1",
        output: { type: "json", value: { status: "success", result: 6765, logs: ["fib 20"] } },
      }),
    ]);
  });

  it("a script that only prints succeeds; a syntax error comes back with its line", async () => {
    const tool = runCodeTool({ timeoutMs: 1_000 });
    const options = { toolCallId: "x", messages: [] };
    expect(await tool.execute?.({ code: "console.warn('careful');" }, options)).toEqual({
      status: "success",
      logs: ["[warn] careful"],
    });
    expect(await tool.execute?.({ code: "const a = 1;\nconst = 2;" }, options)).toEqual({
      status: "link_error",
      logs: [],
      error: expect.stringMatching(/^SyntaxError: .* \(line 2\)$/),
    });
  });
});
