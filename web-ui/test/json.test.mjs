// Unit tests of src/json.ts (exact big integers; `npm test`).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { loadTs } from './load-ts.mjs';

const { parseJson } = await loadTs('json.ts');

test('integers of 16+ digits arrive as exact decimal strings, smaller ones as numbers', () => {
  const v = parseJson('{"id": 1795392000000000001, "n": 42, "neg": -9007199254740993, "list": [1234567890123456, 7]}');
  assert.deepEqual(v, { id: '1795392000000000001', n: 42, neg: '-9007199254740993', list: ['1234567890123456', 7] });
});

test('digits inside strings, escaped quotes and floats are left alone', () => {
  const text = '{"s": "1795392000000000001", "e": "a \\" 1795392000000000002 \\\\", "k1795392000000000003": 1, "f": 1.2345678901234567, "x": 12345678901234567e3, "big": 18446744073709551615}';
  const v = parseJson(text);
  assert.equal(v.s, '1795392000000000001');
  assert.equal(v.e, 'a " 1795392000000000002 \\');
  assert.equal(v.k1795392000000000003, 1);
  assert.equal(typeof v.f, 'number');
  assert.equal(typeof v.x, 'number');
  assert.equal(v.big, '18446744073709551615', 'after a string ending in an escaped backslash');
});

test('text without long numbers is parsed as is', () => {
  assert.deepEqual(parseJson('[1, "two", {"three": 3.5}]'), [1, 'two', { three: 3.5 }]);
});
