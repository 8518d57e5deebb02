// What both browser tests (run.mjs, fleet.mjs) need the same way.

import { join } from 'node:path';

/** JSON with big integers (≥ 16 digits) kept as strings, as the UI parses it. */
export function parseJsonBig(text) {
  return JSON.parse(text.replace(/"(?:[^"\\]|\\.)*"|(?<![\w.+-])-?\d{16,}(?![\d.eE])/g, (m) => (m[0] === '"' ? m : `"${m}"`)));
}

/** Screenshots of the page in both themes (`<dir>/<name>-light.png`, `-dark.png`), then light again. */
export async function shoot(page, dir, name) {
  for (const theme of ['light', 'dark']) {
    await page.emulateMedia({ colorScheme: theme });
    // Charts and canvases redraw in the new colours on the next frame.
    await page.waitForFunction((t) => document.documentElement.dataset.resolvedTheme === t, theme);
    await page.waitForTimeout(200);
    await page.screenshot({ path: join(dir, `${name}-${theme}.png`), fullPage: true });
  }
  await page.emulateMedia({ colorScheme: 'light' });
  await page.waitForFunction(() => document.documentElement.dataset.resolvedTheme === 'light');
}
