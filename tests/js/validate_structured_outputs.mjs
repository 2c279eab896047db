// An independent check of constrained outputs: node validate_structured_outputs.mjs CASES.json.
// CASES.json: [{name, kind: "json_schema" | "json_object" | "regex" | "choice", schema | pattern |
// choices, outputs: [text...]}]. JSON Schemas are checked by Ajv (draft 2020-12, formats by
// ajv-formats), regular expressions by JavaScript's RegExp (whole text, Unicode mode), choices by
// equality. Prints {name: {checked, invalid: [{index, output, why}]}} as JSON.
import Ajv2020 from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { readFileSync } from 'node:fs';

const cases = JSON.parse(readFileSync(process.argv[2], 'utf8'));
const ajv = new Ajv2020({ allErrors: false, strict: true });
addFormats(ajv);
const report = {};

function parse(text) {
  try {
    return { value: JSON.parse(text) };
  } catch (e) {
    return { why: `not JSON: ${e.message}` };
  }
}

for (const c of cases) {
  let check;
  if (c.kind === 'json_schema') {
    const validate = ajv.compile(c.schema);
    check = (text) => {
      const p = parse(text);
      if (p.why) return p.why;
      return validate(p.value) ? null : ajv.errorsText(validate.errors);
    };
  } else if (c.kind === 'json_object') {
    check = (text) => {
      const p = parse(text);
      if (p.why) return p.why;
      const v = p.value;
      return v !== null && typeof v === 'object' && !Array.isArray(v) ? null : 'not an object';
    };
  } else if (c.kind === 'regex') {
    const re = new RegExp(`^(?:${c.pattern})$`, 'u');
    check = (text) => (re.test(text) ? null : `does not match /${c.pattern}/`);
  } else if (c.kind === 'choice') {
    check = (text) => (c.choices.includes(text) ? null : 'not one of the choices');
  } else {
    throw new Error(`case ${c.name}: unknown kind ${c.kind}`);
  }
  const invalid = [];
  c.outputs.forEach((text, index) => {
    const why = check(text);
    if (why) invalid.push({ index, output: text, why });
  });
  report[c.name] = { checked: c.outputs.length, invalid };
}
console.log(JSON.stringify(report));
