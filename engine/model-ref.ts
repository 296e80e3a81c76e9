/** A model id's form, `<provider>/<model>`: both parts non-empty, no blanks. Pure. */

const MODEL_REF = /^[^\s/]+\/\S+$/;

/** True for `<provider>/<model>` (`openai/gpt-5`); false for `openai/`, `/gpt-5`, `gpt-5`. */
export function isModelRef(text: string): boolean {
  return MODEL_REF.test(text);
}
