/**
 * The code editor: CodeMirror 6 with TypeScript highlighting, line numbers, bracket matching, undo/redo and
 * Ctrl/Cmd+Enter to run. One view shows one file at a time; each file keeps its own `EditorState` (text,
 * selection, undo history) while another tab is shown.
 * @module
 */
import { autocompletion, closeBrackets, closeBracketsKeymap, completionKeymap } from "@codemirror/autocomplete";
import { defaultKeymap, history, historyKeymap, indentWithTab } from "@codemirror/commands";
import { javascript } from "@codemirror/lang-javascript";
import { bracketMatching, indentOnInput, indentUnit, syntaxHighlighting } from "@codemirror/language";
import { EditorSelection, EditorState, type Extension, StateEffect, StateField } from "@codemirror/state";
import {
  Decoration,
  type DecorationSet,
  drawSelection,
  EditorView,
  highlightActiveLine,
  highlightActiveLineGutter,
  type KeyBinding,
  keymap,
  lineNumbers,
} from "@codemirror/view";
import { classHighlighter } from "@lezer/highlight";

/** Marks an error's line and character (a position), or clears the mark (`null`). */
const setErrorMark = StateEffect.define<number | null>();

/** The last run's error position in this file: shown until the text changes or the next run starts. */
const errorMark = StateField.define<DecorationSet>({
  create: () => Decoration.none,
  update(marks, transaction) {
    if (transaction.docChanged) return Decoration.none;
    for (const effect of transaction.effects) {
      if (!effect.is(setErrorMark)) continue;
      if (effect.value === null) return Decoration.none;
      const line = transaction.state.doc.lineAt(effect.value);
      const ranges = [Decoration.line({ class: "cm-error-line" }).range(line.from)];
      if (effect.value < line.to)
        ranges.push(Decoration.mark({ class: "cm-error-mark" }).range(effect.value, effect.value + 1));
      return Decoration.set(ranges);
    }
    return marks;
  },
  provide: (field) => EditorView.decorations.from(field),
});

/** The extensions every file's state gets; `onRun` is bound to Ctrl/Cmd+Enter. */
function extensions(onRun: () => void, onChange: (text: string) => void, label: string): Extension[] {
  const bindings: KeyBinding[] = [
    {
      key: "Mod-Enter",
      run: () => {
        onRun();
        return true;
      },
      preventDefault: true,
    },
    indentWithTab,
    // Escape leaves the editor (focus returns to the page), so Tab indenting does not trap keyboard users.
    {
      key: "Escape",
      run: (v) => {
        v.contentDOM.blur();
        return true;
      },
    },
  ];
  return [
    history(),
    errorMark,
    lineNumbers(),
    highlightActiveLineGutter(),
    highlightActiveLine(),
    drawSelection(),
    indentUnit.of("  "),
    indentOnInput(),
    bracketMatching(),
    closeBrackets(),
    autocompletion(),
    javascript({ typescript: true }),
    syntaxHighlighting(classHighlighter),
    keymap.of([...bindings, ...closeBracketsKeymap, ...completionKeymap, ...historyKeymap, ...defaultKeymap]),
    EditorView.contentAttributes.of({ "aria-label": label }),
    EditorView.updateListener.of((update) => {
      if (update.docChanged) onChange(update.state.doc.toString());
    }),
  ];
}

/** One CodeMirror view over several files. */
export class CodeEditor {
  readonly view: EditorView;
  #states: EditorState[] = [];
  #current = 0;

  constructor(
    parent: HTMLElement,
    private readonly onRun: () => void,
    private readonly onChange: (index: number, text: string) => void,
  ) {
    this.view = new EditorView({ parent, state: EditorState.create({ doc: "" }) });
  }

  #create(index: number, text: string, name: string): EditorState {
    return EditorState.create({
      doc: text,
      extensions: extensions(this.onRun, (t) => this.onChange(index, t), `Code editor: ${name}`),
    });
  }

  /** Replaces every file (a new session); shows `index`. */
  load(files: { name: string; source: string }[], index = 0): void {
    this.#states = files.map((f, i) => this.#create(i, f.source, f.name));
    this.#current = -1;
    this.show(Math.min(index, files.length - 1));
  }

  /** Shows file `index`, keeping the shown one's state. */
  show(index: number): void {
    if (index === this.#current) return;
    if (this.#current >= 0 && this.#current < this.#states.length) this.#states[this.#current] = this.view.state;
    const state = this.#states[index];
    if (state === undefined) return;
    this.#current = index;
    this.view.setState(state);
  }

  get current(): number {
    return this.#current;
  }

  /** Selects 1-based `line`:`column` of file `index` (clamped), scrolls to it and focuses the editor. */
  select(index: number, line: number, column: number): void {
    this.show(index);
    const from = this.#offset(this.view.state, line, column);
    const to = from < this.view.state.doc.lineAt(from).to ? from + 1 : from;
    this.view.dispatch({ selection: EditorSelection.range(from, to), scrollIntoView: true });
    this.view.focus();
  }

  /** Marks 1-based `line`:`column` of file `index` (clamped) until its text changes or {@link clearMarks}. */
  markError(index: number, line: number, column: number): void {
    this.#update(index, (state) => ({ effects: setErrorMark.of(this.#offset(state, line, column)) }));
  }

  /** Removes every file's error mark. */
  clearMarks(): void {
    for (let index = 0; index < this.#states.length; index++)
      this.#update(index, () => ({ effects: setErrorMark.of(null) }));
  }

  #offset(state: EditorState, line: number, column: number): number {
    const l = state.doc.line(Math.min(Math.max(1, line), state.doc.lines));
    return Math.min(l.from + Math.max(0, column - 1), l.to);
  }

  /** Applies a transaction to file `index`, shown or kept aside. */
  #update(index: number, spec: (state: EditorState) => { effects: StateEffect<unknown> }): void {
    if (index === this.#current) this.view.dispatch(spec(this.view.state));
    else {
      const state = this.#states[index];
      if (state !== undefined) this.#states[index] = state.update(spec(state)).state;
    }
  }

  focus(): void {
    this.view.focus();
  }
}
