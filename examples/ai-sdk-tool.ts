/**
 * runcode as a tool of the Vercel AI SDK (`ai`): the model writes a program, the tool runs it in a fresh sandbox and
 * answers what it printed and returned. Any model the SDK supports works:
 *
 * ```ts
 * import { generateText, stepCountIs } from "ai";
 * import { openai } from "@ai-sdk/openai";
 *
 * const { text } = await generateText({
 *   model: openai("gpt-4.1"),
 *   tools: { run_code: runCodeTool() },
 *   stopWhen: stepCountIs(5),
 *   prompt: "What is the 50th Fibonacci number? Compute it.",
 * });
 * ```
 * @module
 */
import { tool } from "ai";
import { z } from "zod";
import { RUN_CODE_DESCRIPTION, type RunLimits, runForModel } from "./run-for-model.js";

/** The `run_code` tool; `limits` bound every run the model asks for. */
export function runCodeTool(limits: RunLimits = {}) {
  return tool({
    description: RUN_CODE_DESCRIPTION,
    inputSchema: z.object({
      code: z.string().describe("The program: an ES module in TypeScript (types are erased, not checked)."),
    }),
    execute: ({ code }) => runForModel(code, limits),
  });
}
