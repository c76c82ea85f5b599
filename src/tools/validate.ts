/**
 * JSON Schema validation with `@cfworker/json-schema`: an interpreter, no code generation, so it runs on Workers
 * where `new Function` is refused. Messages name the failing location and are short enough for an error response.
 *
 * The interpreter's own cost is not linear in the value: `uniqueItems` compares every pair of items deeply, `enum`
 * and `const` compare deeply, and a recursive schema with two applicators per level revisits each value 2^depth
 * times. So every check spends from a {@link WorkBudget}, and past it stops with a `BudgetError`: the validator
 * never sees the value itself but a read-only view whose every property read, key listing and descriptor lookup is
 * paid for, and every time it applies a subschema (one call of its `validate`) it pays too, through an accessor on
 * a keyword it reads at every call (on a copy of the schema: the tool's own object is left as it is).
 *
 * A budget cannot stop a regular expression: JavaScript's engine backtracks, and `^(\w+\s?)*$` from an upstream
 * server's schema held the host ~10 s over 28 characters. So a schema from elsewhere is checked without its regexes
 * (`{ regexes: false }`): its `pattern`s are dropped where that only loosens the check, and where it could also
 * tighten it (under `not`, `oneOf`, `if` or `maxContains`) or the schema has `patternProperties` or `dependencies`
 * (whose subschemas the interpreter applies without listing them), the schema is not checked at all. Either way a
 * value the schema accepts is accepted, and the server that wrote the schema checks the rest.
 * @module
 */
import { format, type OutputUnit, type Schema, Validator } from "@cfworker/json-schema";
import { BudgetError, WorkBudget } from "../values/budget.js";
import { isUrl } from "./formats.js";
import type { JSONSchema } from "./types.js";

// The library's `url` check backtracks exponentially (see formats.ts): swap in the linear one it is proven equal to.
// `format` is the library's own table, read at every check.
format.url = isUrl;

/** Units one read of the value costs (a property, a key list, a descriptor); a string read adds a unit per 8 chars. */
const UNITS_PER_READ = 8;
/** Units one application of a subschema costs (the interpreter's fixed work per call, about 30 reads' worth). */
const UNITS_PER_SUBSCHEMA = 32;
/** What a check may spend when its caller gives no budget: about a million reads. */
const DEFAULT_VALIDATION_UNITS = 8_388_608;
/** What the second pass, which lists every problem of an invalid value, may spend before the first problems do. */
const DETAIL_UNITS = 131_072;
/** Longest problem in a message, in characters (a key or a value can be a megabyte). */
const MAX_PROBLEM_CHARS = 200;

/** Keywords whose own message only says "a child failed"; the child's message is the useful one. */
const CONTAINERS = new Set(["properties", "items", "prefixItems", "allOf", "$ref", "false", "additionalItems"]);
const UNKNOWN_PREFIX = 'Property "';
const UNKNOWN_SUFFIX = '" does not match additional properties schema.';

const clip = (text: string): string =>
  text.length <= MAX_PROBLEM_CHARS ? text : `${text.slice(0, MAX_PROBLEM_CHARS - 1)}…`;

function describe(unit: OutputUnit): string | undefined {
  if (CONTAINERS.has(unit.keyword)) return undefined;
  const at = clip(unit.instanceLocation.startsWith("#/") ? unit.instanceLocation.slice(2) : "");
  if (unit.keyword === "additionalProperties") {
    // Sliced, not matched: a regex over a key the guest chose once took seconds (`Property "` repeated).
    const { error } = unit;
    const name =
      error.startsWith(UNKNOWN_PREFIX) && error.endsWith(UNKNOWN_SUFFIX)
        ? error.slice(UNKNOWN_PREFIX.length, error.length - UNKNOWN_SUFFIX.length)
        : "?";
    return `unknown field ${JSON.stringify(clip(at === "" ? name : `${at}/${name}`))}`;
  }
  return clip(at === "" ? unit.error : `${at}: ${unit.error}`);
}

/**
 * The validator's view of `value`: the same data, every read paid for. Views of nested objects are made as they
 * are reached and reused, so a subtree the schema never enters costs nothing.
 */
function viewOf(value: unknown, budget: WorkBudget): unknown {
  const views = new WeakMap<object, object>();
  const read = (item: unknown): unknown => {
    if (typeof item === "string") {
      budget.spend(item.length >>> 3);
      return item;
    }
    if (typeof item !== "object" || item === null) return item;
    let view = views.get(item);
    if (view === undefined) {
      view = new Proxy(item, handler);
      views.set(item, view);
    }
    return view;
  };
  const handler: ProxyHandler<object> = {
    get(target, key) {
      budget.spend(UNITS_PER_READ);
      return read(Reflect.get(target, key));
    },
    has(target, key) {
      budget.spend(UNITS_PER_READ);
      return Reflect.has(target, key);
    },
    ownKeys(target) {
      const keys = Reflect.ownKeys(target);
      budget.spend(UNITS_PER_READ + keys.length);
      return keys;
    },
    getOwnPropertyDescriptor(target, key) {
      budget.spend(UNITS_PER_READ);
      return Reflect.getOwnPropertyDescriptor(target, key);
    },
    set: () => false,
    defineProperty: () => false,
    deleteProperty: () => false,
  };
  return read(value);
}

/** A keyword `validate` reads from every subschema at every call (it destructures them all), rarely set by hand. */
const COUNTED_KEYWORD = "maxContains";
/** The budget of the check running now (validation is synchronous, so one at a time). */
let charged: WorkBudget | undefined;

/** Keys whose presence anywhere in a schema makes dropping its `pattern`s unsound or incomplete (see above). */
const REGEX_UNSAFE = new Set(["not", "oneOf", "if", "maxContains", "patternProperties", "dependencies"]);

/** Whether any object in `schema` (a JSON tree: subschemas and data alike, which errs on the safe side) has `keys`. */
function hasAnyKey(schema: JSONSchema, keys: (key: string, value: unknown) => boolean): boolean {
  const stack: unknown[] = [schema];
  while (stack.length > 0) {
    const item = stack.pop();
    if (typeof item !== "object" || item === null) continue;
    for (const [key, value] of Object.entries(item)) {
      if (!Array.isArray(item) && keys(key, value)) return true;
      stack.push(value);
    }
  }
  return false;
}

/** The subschemas of a validator: `lookup` holds every one `dereference` found, which is every one `validate` applies. */
function subschemas(validator: Validator): Set<Record<string, unknown>> {
  const { lookup } = validator as unknown as { lookup: Record<string, unknown> };
  return new Set(
    Object.values(lookup).filter((node): node is Record<string, unknown> => typeof node === "object" && node !== null),
  );
}

/**
 * A validator over `schema` (the host's copy) whose every subschema charges {@link charged} when applied. Two
 * validators may share one copy: the second finds the accessors in place.
 */
function counting(schema: JSONSchema, shortCircuit: boolean): Validator {
  const validator = new Validator(schema as Schema, "2020-12", shortCircuit);
  for (const node of subschemas(validator)) {
    const own = Object.getOwnPropertyDescriptor(node, COUNTED_KEYWORD);
    if (own !== undefined && (!own.configurable || own.get !== undefined)) continue;
    const value: unknown = own?.value;
    Object.defineProperty(node, COUNTED_KEYWORD, {
      get() {
        charged?.spend(UNITS_PER_SUBSCHEMA);
        return value;
      },
      enumerable: own?.enumerable ?? false,
      configurable: true,
    });
  }
  return validator;
}

/** Runs `validator` over a view of `value` charged to `budget`. */
function run(validator: Validator, value: unknown, budget: WorkBudget) {
  const outer = charged;
  charged = budget;
  try {
    return validator.validate(viewOf(value, budget));
  } finally {
    charged = outer;
  }
}

/**
 * A compiled schema: `check(value, budget?)` returns `undefined` when valid, else one message listing the problems.
 * It throws a `BudgetError` when the check needs more than `budget` (default {@link DEFAULT_VALIDATION_UNITS}), and
 * may throw a `RangeError` for a value nested too deep for the host's stack: bound the value's depth first.
 */
export type Check = (value: unknown, budget?: WorkBudget) => string | undefined;

interface SchemaOptions {
  /** Whether the schema's regular expressions run over values (default `true`); `false` for a schema from elsewhere. */
  regexes?: boolean;
}

export function compileSchema(schema: JSONSchema, { regexes = true }: SchemaOptions = {}): Check {
  const copy = structuredClone(schema);
  const withRegexes =
    !regexes &&
    hasAnyKey(copy, (key, value) => key === "patternProperties" || (key === "pattern" && typeof value === "string"));
  if (withRegexes && hasAnyKey(copy, (key) => REGEX_UNSAFE.has(key))) return () => undefined;
  // Short-circuiting decides: the same verdict, and it stops at the first problem of each object or array (the full
  // pass once built 110 MB of errors for 250,000 bad items, then threw a RangeError spreading them).
  const decide = counting(copy, true);
  if (withRegexes) {
    for (const node of subschemas(decide)) if (typeof node.pattern === "string") delete node.pattern;
  }
  // Made when a value first fails: most never do.
  let detail: Validator | undefined;
  return (value, budget = new WorkBudget(DEFAULT_VALIDATION_UNITS, "validating the value")) => {
    const verdict = run(decide, value, budget);
    if (verdict.valid) return undefined;
    let { errors } = verdict;
    // Every problem of a small value, when listing them is cheap; otherwise the first ones.
    const more = new WorkBudget(Math.min(DETAIL_UNITS, budget.left), "listing the problems");
    try {
      detail ??= counting(copy, false);
      errors = run(detail, value, more).errors;
    } catch {
      // Over its budget (or the stack): the first problems stand.
    }
    budget.spend(Math.min(more.spent, budget.left));
    const messages = [...new Set(errors.map(describe).filter((m): m is string => m !== undefined))];
    return messages.length === 0 ? "does not match the schema" : messages.slice(0, 5).join("; ");
  };
}

/**
 * A schema from elsewhere (an upstream server's) compiled without its regexes, when it first checks a value:
 * `POST /mcp` lists every upstream tool for each request and most are never called. A schema that does not compile
 * (two subschemas of one `$id`) or cannot be applied (an unresolved `$ref`) fails the check with a message saying
 * so, never the service it belongs to.
 */
export function compileForeignSchema(schema: JSONSchema): Check {
  let check: Check | undefined;
  return (value, budget) => {
    try {
      check ??= compileSchema(schema, { regexes: false });
      return check(value, budget);
    } catch (error) {
      if (error instanceof BudgetError || error instanceof RangeError) throw error;
      return `its schema cannot be used: ${clip((error as Error).message)}`;
    }
  };
}
