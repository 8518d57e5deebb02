// Unit tests of src/time.ts (instants and ranges in words; `npm test`).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { loadTs } from './load-ts.mjs';

const { isNs, rangeText, rfc3339, parseTimeInput } = await loadTs('time.ts');

test('a range reads as UTC instants, open ends named', () => {
  assert.equal(rangeText('1795392000000000000', '1795392000500000000'), '2026-11-23T00:00:00Z → 2026-11-23T00:00:00.5Z');
  assert.equal(rangeText(null, undefined), 'the beginning → now');
  assert.equal(rangeText('-1h', 'now'), '-1h → now', 'relative inputs are shown as typed');
  assert.equal(rangeText('', null), 'the beginning → now', 'an empty field is an open end too');
});

test('only digits are Unix nanoseconds', () => {
  assert.equal(isNs('123'), true);
  for (const v of ['', null, undefined, 'now', '-1h', '12a', ' 12']) assert.equal(isNs(v), false, String(v));
  assert.equal(rfc3339('1795392000000000001'), '2026-11-23T00:00:00.000000001Z');
  assert.equal(parseTimeInput('2026-11-23T00:00:00Z'), '1795392000000000000');
});
