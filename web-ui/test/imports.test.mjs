// The web UI's modules import each other in one direction only: no circle among src/**/*.ts
// (a view importing the shell that imports every view was an 11-module one). Type-only imports
// count: they tie the modules as tightly for a reader.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const src = resolve(dirname(fileURLToPath(import.meta.url)), '../src');

function files(dir) {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return files(path);
    return name.endsWith('.ts') && !name.endsWith('.d.ts') ? [path] : [];
  });
}

/** Module (path relative to src, without .ts) → the local modules it imports. */
export function graph(sources) {
  const edges = new Map();
  for (const [name, text] of sources) {
    const deps = new Set();
    for (const m of text.matchAll(/^\s*(?:import|export)\b[^'";]*?from\s+['"](\.{1,2}\/[^'"]+)['"]/gms)) {
      const target = join(dirname(name), m[1]).replace(/\.ts$/, '');
      deps.add(target);
    }
    edges.set(name, deps);
  }
  return edges;
}

/** The first circle in `edges`, as the path around it, or null. */
export function circle(edges) {
  const done = new Set();
  const visit = (at, path) => {
    const i = path.indexOf(at);
    if (i >= 0) return [...path.slice(i), at];
    if (done.has(at)) return null;
    for (const next of edges.get(at) ?? []) {
      const c = visit(next, [...path, at]);
      if (c) return c;
    }
    done.add(at);
    return null;
  };
  for (const start of edges.keys()) {
    const c = visit(start, []);
    if (c) return c;
  }
  return null;
}

test('the scan finds type and value imports, and circles', () => {
  const g = graph([
    ['main', "import './style.css';\nimport { a } from './views/a';\nimport type { V } from './view';"],
    ['views/a', "import type { V } from '../view';\nimport {\n  b,\n} from '../main';"],
    ['view', ''],
  ]);
  assert.deepEqual([...g.get('main')].sort(), ['view', 'views/a']);
  assert.deepEqual([...g.get('views/a')].sort(), ['main', 'view']);
  assert.deepEqual(circle(g), ['main', 'views/a', 'main']);
  g.get('views/a').delete('main');
  assert.equal(circle(g), null);
});

test('no circle among the UI modules', () => {
  const sources = files(src).map((path) => [relative(src, path).replace(/\.ts$/, ''), readFileSync(path, 'utf8')]);
  assert.ok(sources.length > 15, `only ${sources.length} modules found`);
  const g = graph(sources);
  const edges = [...g.values()].reduce((n, d) => n + d.size, 0);
  assert.ok(edges > 40, `only ${edges} imports found: is the scan broken?`);
  assert.equal(circle(g), null, `modules that import each other in a circle: ${circle(g)?.join(' → ')}`);
});
