// Unit tests of src/framekinds.ts (where each kind of code is drawn in the flame graph; `npm test`).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { loadTs } from './load-ts.mjs';

const { paletteIndex, PALETTE, WARM_SHADES, KIND_SHADES, KINDS } = await loadTs('framekinds.ts');

test('each kind is drawn from a range of the palette of its own', () => {
  assert.equal(PALETTE, WARM_SHADES + KINDS.length * KIND_SHADES);
  const range = (kind) => new Set(Array.from({ length: 200 }, (_, h) => paletteIndex(kind, h * 2654435761)));
  const native = range('native');
  assert.ok([...native].every((i) => i < WARM_SHADES), 'native frames in the warm hues');
  assert.equal(native.size, WARM_SHADES, 'every warm shade used');
  const seen = new Set(native);
  for (const kind of KINDS) {
    const r = range(kind);
    assert.equal(r.size, KIND_SHADES, `${kind}: its shades`);
    for (const i of r) {
      assert.ok(i >= WARM_SHADES && i < PALETTE, `${kind}: ${i} in the palette, after the warm hues`);
      assert.ok(!seen.has(i), `${kind}: ${i} shared with another kind`);
      seen.add(i);
    }
  }
  assert.equal(paletteIndex('something new', 7), paletteIndex('native', 7), 'an unknown kind is drawn as native code');
});
