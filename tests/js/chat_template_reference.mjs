// Renders chat templates with @huggingface/jinja (the reference dq4's chat templates are
// compared with in tests/chat_template_differential_test.cc).
// usage: node chat_template_reference.mjs IN.json OUT.json
//   IN:  {"templates": {name: {"source": text, "variables": {bos_token: ...}}},
//         "cases": [{"template": name, "context": {messages, tools, ...},
//                    "add_generation_prompt": bool}]}
//   OUT: one {"text": rendered} or {"error": message} per case.
// Variables are passed as transformers passes them: the special tokens, tools and documents
// (null unless given), the context, then add_generation_prompt.
import { readFileSync, writeFileSync } from "node:fs";
import { Template } from "@huggingface/jinja";

const [inPath, outPath] = process.argv.slice(2);
const input = JSON.parse(readFileSync(inPath, "utf8"));
const compiled = {};
for (const [name, t] of Object.entries(input.templates)) compiled[name] = new Template(t.source);

const results = input.cases.map((c) => {
  try {
    const variables = {
      ...input.templates[c.template].variables,
      tools: null,
      documents: null,
      ...c.context,
      add_generation_prompt: c.add_generation_prompt,
    };
    return { text: compiled[c.template].render(variables) };
  } catch (e) {
    return { error: String(e && e.message ? e.message : e) };
  }
});
writeFileSync(outPath, JSON.stringify(results));
