/**
 * runcode behind OpenAI-style function calling, with no SDK: a `run_code` function declared in the Chat Completions
 * format, and the loop that answers the model's `tool_calls` until it replies in words. `complete` is whatever sends
 * the request to a model, for instance with the official client:
 *
 * ```ts
 * const openai = new OpenAI();
 * const { answer } = await chatWithRunCode(
 *   (request) => openai.chat.completions.create({ model: "gpt-4.1", ...request }),
 *   [{ role: "user", content: "What is the 50th Fibonacci number? Compute it." }],
 * );
 * ```
 * @module
 */
import { RUN_CODE_DESCRIPTION, type RunLimits, runForModel } from "./run-for-model.js";

/** The function as the Chat Completions API declares tools. */
export const RUN_CODE_FUNCTION = {
  type: "function",
  function: {
    name: "run_code",
    description: RUN_CODE_DESCRIPTION,
    parameters: {
      type: "object",
      properties: {
        code: {
          type: "string",
          description: "The program: an ES module in TypeScript (types are erased, not checked).",
        },
      },
      required: ["code"],
      additionalProperties: false,
    },
    strict: true,
  },
} as const;

export interface ToolCall {
  id: string;
  type: "function";
  function: { name: string; arguments: string };
}

export type ChatMessage =
  | { role: "system" | "user"; content: string }
  | { role: "assistant"; content: string | null; tool_calls?: ToolCall[] }
  | { role: "tool"; tool_call_id: string; content: string };

/** Sends one Chat Completions request; answers at least the first choice's message. */
export type Complete = (request: {
  messages: ChatMessage[];
  tools: (typeof RUN_CODE_FUNCTION)[];
}) => Promise<{ choices: { message: ChatMessage }[] }>;

/**
 * Asks the model until it answers without calling a tool, at most `maxTurns` times; every `run_code` call runs in a
 * fresh sandbox within `limits`. Answers the model's last words and the whole conversation.
 */
export async function chatWithRunCode(
  complete: Complete,
  conversation: ChatMessage[],
  { maxTurns = 8, ...limits }: RunLimits & { maxTurns?: number } = {},
): Promise<{ answer: string; messages: ChatMessage[] }> {
  const messages = [...conversation];
  for (let turn = 0; turn < maxTurns; turn++) {
    const message = (await complete({ messages, tools: [RUN_CODE_FUNCTION] })).choices[0]?.message;
    if (message?.role !== "assistant") throw new Error("The model answered no assistant message");
    messages.push(message);
    if (message.tool_calls === undefined || message.tool_calls.length === 0) {
      return { answer: message.content ?? "", messages };
    }
    for (const call of message.tool_calls) {
      messages.push({ role: "tool", tool_call_id: call.id, content: JSON.stringify(await answerCall(call, limits)) });
    }
  }
  throw new Error(`The model still called tools after ${maxTurns} turns`);
}

/** What one tool call gets back; a call the tool cannot take is answered so the model can correct it. */
async function answerCall(call: ToolCall, limits: RunLimits): Promise<unknown> {
  if (call.function.name !== RUN_CODE_FUNCTION.function.name) return { error: `No tool named '${call.function.name}'` };
  let input: unknown;
  try {
    input = JSON.parse(call.function.arguments);
  } catch (error) {
    return { error: `The arguments are not JSON: ${(error as Error).message}` };
  }
  const code = typeof input === "object" && input !== null ? (input as { code?: unknown }).code : undefined;
  if (typeof code !== "string") return { error: "The arguments must be { code: string }" };
  return runForModel(code, limits);
}
