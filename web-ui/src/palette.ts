// The page's palette for canvases and charts: style.css writes each colour once, as
// `--name: light-dark(light, dark)`, which only CSS resolves (a canvas takes no light-dark()).
// A colour here is what the page shows now: `var(--name)` computed on a hidden element, as
// rgb()/rgba(), cached until the theme changes (main.ts's `loupe:theme`, before any redraw).

const cache = new Map<string, string>();
window.addEventListener('loupe:theme', () => cache.clear());

let probe: HTMLElement | null = null;

/** `--name`'s colour in the current theme, e.g. `rgb(37, 99, 235)`. */
export function themeColor(name: string): string {
  let v = cache.get(name);
  if (v === undefined) {
    if (!probe?.isConnected) {
      probe = document.createElement('span');
      probe.hidden = true;
      probe.setAttribute('aria-hidden', 'true');
      (document.body ?? document.documentElement).append(probe);
    }
    probe.style.color = `var(${name})`;
    v = getComputedStyle(probe).color;
    cache.set(name, v);
  }
  return v;
}

