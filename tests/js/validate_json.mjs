// An independent check of constrained output: node validate_json.mjs SCHEMA_FILE < LINES
// Each stdin line (empty lines skipped) must be one JSON text valid under the JSON Schema in
// SCHEMA_FILE, by Ajv (draft 2020-12, formats checked by ajv-formats, unknown keywords ignored).
// Prints one JSON line {"total": N, "valid": V, "invalid": [{"line": i, "error": "..."}]}
// (lines counted from 1, at most 20 listed) and exits 0 when every line is valid, 1 when one is
// not, 2 on bad usage or a schema Ajv cannot compile.
import { readFileSync } from 'node:fs';
import Ajv2020 from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';

const [schemaFile] = process.argv.slice(2);
if (!schemaFile) {
  console.error('usage: node validate_json.mjs SCHEMA_FILE < JSON_LINES');
  process.exit(2);
}
let validate;
try {
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  addFormats(ajv);
  validate = ajv.compile(JSON.parse(readFileSync(schemaFile, 'utf8')));
} catch (e) {
  console.error(`validate_json: ${schemaFile}: ${e.message}`);
  process.exit(2);
}

const lines = readFileSync(0, 'utf8').split('\n');
const invalid = [];
let total = 0;
lines.forEach((text, i) => {
  if (text.trim() === '') return;
  total++;
  let error = null;
  try {
    if (!validate(JSON.parse(text))) error = JSON.stringify(validate.errors.slice(0, 3));
  } catch (e) {
    error = `not JSON: ${e.message}`;
  }
  if (error !== null) invalid.push({ line: i + 1, error });
});
console.log(JSON.stringify({ total, valid: total - invalid.length, invalid: invalid.slice(0, 20) }));
process.exit(invalid.length === 0 ? 0 : 1);
