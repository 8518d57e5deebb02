// The web UI over HTTPS, unchanged: a second `loupe serve` with `--tls-cert/--tls-key` (a
// certificate `openssl` makes here for 127.0.0.1), on a store of its own, opened in a browser
// context that trusts it (`ignoreHTTPSErrors`: the test's own CA is not the system's); the
// overview and a run's page load from `https://…` with a token, with no console errors, and the
// same page over plain HTTP to that port gets nothing.
// Run by e2e/run.mjs (e2e/harness.mjs's Chromium and binaries), after the views on the main server.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LOUPE, SYNTH, goTo, newPageIn, parseJsonBig, stopChild } from '../harness.mjs';

/** `loupe serve ARGS` on port 0; resolves to its child and URL once it prints where it serves. */
function serve(args) {
  return new Promise((resolvePromise, reject) => {
    const child = spawn(LOUPE, ['serve', '--listen', '127.0.0.1:0', '--retention', '36500days', ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    const timer = setTimeout(() => reject(new Error(`loupe serve did not start in 30 s: ${out}`)), 30_000);
    child.stdout.on('data', (d) => {
      out += d;
      const m = /serving .* on (https?:\/\/[\d.]+:\d+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolvePromise({ child, url: m[1] });
      }
    });
    child.stderr.on('data', (d) => (out += d));
    child.on('exit', (code) => reject(new Error(`loupe serve exited with ${code}: ${out}`)));
  });
}

test('the web UI works over HTTPS unchanged', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'loupe-e2e-https-'));
  const data = join(dir, 'data');
  let served;
  try {
    const synth = parseJsonBig(execFileSync(SYNTH, ['--data-dir', data], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim().split('\n').reverse().find((l) => l.startsWith('{')));
    const key = join(dir, 'key.pem');
    const cert = join(dir, 'cert.pem');
    execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-days', '2', '-subj', '/CN=loupe e2e', '-addext', 'subjectAltName=IP:127.0.0.1', '-keyout', key, '-out', cert], { stdio: 'ignore' });
    const token = /loupe_[0-9a-f]{64}/.exec(execFileSync(LOUPE, ['token', 'add', 'https', '--data-dir', data], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }))?.[0];
    served = await serve(['--data-dir', data, '--tls-cert', cert, '--tls-key', key]);
    assert.match(served.url, /^https:\/\/127\.0\.0\.1:\d+$/);
    const { page, close } = await newPageIn({ ignoreHTTPSErrors: true });
    try {
      await page.addInitScript((t) => sessionStorage.setItem('loupe.token', t), token);
      await goTo(served.url, page, '#/');
      await page.waitForSelector('#days-table tr[data-date="2026-11-23"]');
      await goTo(served.url, page, `#/run/${synth.run_a}`);
      assert.equal(await page.evaluate(() => location.protocol), 'https:');
      assert.ok(await page.isVisible('canvas'), 'the run page drew its chart over HTTPS');
      assert.deepEqual(page.consoleErrors, [], `console errors over HTTPS:\n${page.consoleErrors.join('\n')}`);
      // Plain HTTP to the same port is not answered.
      const plain = await fetch(served.url.replace('https://', 'http://') + '/api/v1/health').then(() => 'answered', (e) => `refused: ${e.cause?.code ?? e.message}`);
      assert.match(plain, /^refused/);
    } finally {
      await close();
    }
  } finally {
    served?.child.removeAllListeners('exit');
    await stopChild(served?.child);
    rmSync(dir, { recursive: true, force: true });
  }
});
