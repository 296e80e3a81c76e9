/**
 * `hookgate schema`: print the config's JSON Schema for editors (the text of
 * schemas/hookgate.schema.json). Exit 0.
 */
import { publishedConfigSchema } from '../../schemas/published.ts';

/** Print the published schema as pretty JSON. */
export function printSchema(out: (line: string) => void): number {
  out(JSON.stringify(publishedConfigSchema(), null, 2));
  return 0;
}
