// Loads a TypeScript module of src/ into node for unit tests: transpiled in memory with the
// project's own `typescript` (types erased, nothing type-checked — `tsc --noEmit` does that)
// and imported from a data: URL. Only for modules without runtime imports of other modules
// (type-only imports are fine), which is what keeps them testable outside a browser.

import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const src = resolve(dirname(fileURLToPath(import.meta.url)), '..', 'src');

export async function loadTs(name) {
  const path = resolve(src, name);
  const out = ts.transpileModule(readFileSync(path, 'utf8'), {
    fileName: path,
    compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022, verbatimModuleSyntax: false },
  });
  if (/^\s*(import|export)\b[^;]*\bfrom\s*['"]/m.test(out.outputText)) {
    throw new Error(`${name} imports other modules at run time; loadTs handles self-contained modules only`);
  }
  return import('data:text/javascript;base64,' + Buffer.from(out.outputText).toString('base64'));
}
