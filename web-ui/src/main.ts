// The shell: header (host, navigation, token, theme), hash router, and the views.

import './style.css';
import { ApiError, api, getToken, setToken } from './api';
import { h } from './dom';
import type { Health } from './types';
import { errorBox } from './ui';
import { overviewView } from './views/overview';
import { dayView } from './views/day';
import { runView } from './views/run';
import { profileView } from './views/profile';
import { analysesView } from './views/analyses';
import { timelineView } from './views/timeline';
import { probesView } from './views/probes';
import { probeView } from './views/probe';
import { probeStartView } from './views/probestart';
import { fleetView } from './views/fleet';
import { windowView } from './views/window';
import type { View, ViewCtx } from './view';


interface LoupeGlobal {
  timings: Record<string, number>;
  view: string;
  ready: boolean;
  health: Health | null;
}

declare global {
  interface Window {
    __loupe: LoupeGlobal;
  }
}

const loupe: LoupeGlobal = (window.__loupe = { timings: {}, view: '', ready: false, health: null });

// ---- theme ----

type ThemeChoice = 'auto' | 'light' | 'dark';
const THEME_KEY = 'loupe.theme';
const media = window.matchMedia('(prefers-color-scheme: dark)');

function themeChoice(): ThemeChoice {
  try {
    const v = localStorage.getItem(THEME_KEY);
    if (v === 'light' || v === 'dark') return v;
  } catch {
    /* no storage */
  }
  return 'auto';
}

function applyTheme(): void {
  const choice = themeChoice();
  const root = document.documentElement;
  if (choice === 'auto') delete root.dataset.theme;
  else root.dataset.theme = choice;
  const resolved = choice === 'auto' ? (media.matches ? 'dark' : 'light') : choice;
  const changed = root.dataset.resolvedTheme !== resolved;
  root.dataset.resolvedTheme = resolved;
  // Canvases and charts redraw with the new colours, keeping their state (zoom, search).
  if (changed) window.dispatchEvent(new CustomEvent('loupe:theme'));
  themeButton.textContent = `Theme: ${choice}`;
  themeButton.setAttribute('aria-label', `Colour theme: ${choice} (change)`);
}

const themeButton = h('button', {
  type: 'button',
  class: 'ghost',
  onclick: () => {
    const next: ThemeChoice = { auto: 'light', light: 'dark', dark: 'auto' }[themeChoice()] as ThemeChoice;
    try {
      localStorage.setItem(THEME_KEY, next);
    } catch {
      /* no storage */
    }
    applyTheme();
  },
});
media.addEventListener('change', () => applyTheme());

// ---- token ----

const tokenInput = h('input', {
  type: 'password',
  id: 'token-input',
  autocomplete: 'off',
  spellcheck: 'false',
  placeholder: 'loupe_…',
  'aria-describedby': 'token-help',
});
const tokenMessage = h('p', { id: 'token-help', class: 'muted' });
const tokenPanel = h(
  'form',
  {
    class: 'token-panel',
    id: 'token-panel',
    hidden: true,
    onsubmit: (e: Event) => {
      e.preventDefault();
      setToken(tokenInput.value);
      tokenInput.value = '';
      tokenPanel.hidden = true;
      authBanner.hidden = true;
      route();
    },
  },
  h('label', { for: 'token-input' }, 'Team token '),
  tokenInput,
  h('button', { type: 'submit', class: 'primary' }, 'Save token'),
  h(
    'button',
    {
      type: 'button',
      onclick: () => {
        setToken('');
        tokenPanel.hidden = true;
        route();
      },
    },
    'Clear',
  ),
  tokenMessage,
);
const tokenButton = h('button', {
  type: 'button',
  class: 'ghost',
  'aria-controls': 'token-panel',
  onclick: () => toggleTokenPanel(),
});
const authBanner = h('div', { class: 'auth-banner', role: 'alert', hidden: true });

function toggleTokenPanel(open?: boolean): void {
  tokenPanel.hidden = open === undefined ? !tokenPanel.hidden : !open;
  tokenButton.setAttribute('aria-expanded', String(!tokenPanel.hidden));
  if (!tokenPanel.hidden) tokenInput.focus();
}

function updateTokenUi(): void {
  const has = !!getToken();
  tokenButton.textContent = has ? 'Token: set' : 'Token: none';
  tokenButton.classList.toggle('warn', !has && !!loupe.health?.auth);
  tokenMessage.textContent = has
    ? 'A token is kept for this browser session (sessionStorage) and sent as Authorization: Bearer.'
    : loupe.health?.auth
      ? 'This server requires a team token (create one with `loupe token add TEAM`). It is kept for this browser session only.'
      : 'This server runs without auth (--no-auth); a token is not needed.';
}

window.addEventListener('loupe:token', updateTokenUi);
window.addEventListener('loupe:unauthorized', (e) => {
  const err = (e as CustomEvent<ApiError>).detail;
  const had = !!getToken();
  authBanner.replaceChildren(
    h('strong', null, had ? 'Token unknown or revoked. ' : 'Token missing. '),
    `The server answered 401 ${err.code}: ${err.message}. `,
    'Enter a valid team token below.',
  );
  authBanner.hidden = false;
  toggleTokenPanel(true);
});

// ---- layout ----

const hostLabel = h('span', { class: 'host', id: 'host-label' }, '…');
const nav = h(
  'nav',
  { 'aria-label': 'Main' },
  h('a', { href: '#/', 'data-nav': 'overview' }, 'Overview'),
  h('a', { href: '#/profile', 'data-nav': 'profile' }, 'Profile'),
  h('a', { href: '#/window', 'data-nav': 'window' }, 'Window'),
  h('a', { href: '#/timeline', 'data-nav': 'timeline' }, 'Timeline'),
  h('a', { href: '#/probes', 'data-nav': 'probes' }, 'Probes'),
  h('a', { href: '#/analyses', 'data-nav': 'analyses' }, 'Analyses'),
  // Shown once health says this agent is in a fleet.
  h('a', { href: '#/fleet', 'data-nav': 'fleet', id: 'nav-fleet', hidden: true }, 'Fleet'),
);
const main = h('main', { id: 'view', tabindex: '-1' });
const header = h(
  'header',
  { class: 'top' },
  h('a', { class: 'skip', href: '#view', onclick: (e: Event) => (e.preventDefault(), main.focus()) }, 'Skip to content'),
  h('a', { class: 'brand', href: '#/' }, 'Loupe'),
  hostLabel,
  nav,
  h('span', { class: 'spacer' }),
  tokenButton,
  themeButton,
);
document.body.append(header, authBanner, tokenPanel, main);
applyTheme();

async function loadHealth(): Promise<void> {
  try {
    const health = await api<Health>('/api/v1/health');
    loupe.health = health;
    hostLabel.textContent = `${health.hostname} · ${health.mode === 'agent' ? 'agent' : 'serve'} · v${health.version}${health.fleet ? ` · rack ${health.fleet.rack}` : ''}`;
    nav.querySelector<HTMLElement>('#nav-fleet')!.hidden = !health.fleet;
    if (health.auth && !getToken()) {
      tokenMessage.textContent = '';
      toggleTokenPanel(true);
    }
  } catch (e) {
    hostLabel.textContent = 'server unreachable';
    hostLabel.title = (e as Error).message;
  }
  updateTokenUi();
}

// ---- router ----

const routes: [RegExp, string, View][] = [
  [/^\/?$/, 'overview', overviewView],
  [/^\/day\/(\d{4}-\d{2}-\d{2})$/, 'day', dayView],
  [/^\/run\/(\d+)$/, 'run', runView],
  [/^\/profile$/, 'profile', profileView],
  [/^\/timeline$/, 'timeline', timelineView],
  [/^\/window$/, 'window', windowView],
  [/^\/probes$/, 'probes', probesView],
  [/^\/probes\/start$/, 'probe-start', probeStartView],
  [/^\/probes\/(\d+)$/, 'probe', probeView],
  [/^\/analyses(?:\/([a-z0-9][a-z0-9_-]*))?$/, 'analyses', analysesView],
  [/^\/fleet$/, 'fleet', fleetView],
];

let current: { abort: AbortController; cleanups: (() => void)[] } | null = null;
let lastPath = '';
const healthReady = loadHealth();

async function route(): Promise<void> {
  const t0 = performance.now();
  const raw = location.hash.replace(/^#/, '') || '/';
  const [path, qs = ''] = raw.split('?', 2);
  if (current) {
    current.abort.abort();
    for (const f of current.cleanups) {
      try {
        f();
      } catch {
        /* keep going */
      }
    }
  }
  const mine = { abort: new AbortController(), cleanups: [] as (() => void)[] };
  current = mine;
  loupe.ready = false;
  main.dataset.ready = 'false';
  main.replaceChildren();
  const match = routes.map(([re, name, view]) => ({ m: re.exec(path), name, view })).find((r) => r.m);
  const name = match?.name ?? 'not-found';
  loupe.view = name;
  main.dataset.view = name;
  // Pages under a section mark its link: a day or a run the overview, a session or the start form the probes.
  // Another fleet host's run or profile (`?host=`) belongs to the fleet.
  const fleetPage = (name === 'run' || name === 'profile') && new URLSearchParams(qs).has('host');
  const section = fleetPage ? 'fleet' : name === 'day' || name === 'run' ? 'overview' : name === 'probe' || name === 'probe-start' ? 'probes' : name;
  for (const a of nav.querySelectorAll('a')) {
    if (a.dataset.nav === section) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  }
  const focusMain = path !== lastPath && lastPath !== '';
  lastPath = path;
  await healthReady;
  if (current !== mine) return;
  if (!match) {
    document.title = 'Not found · Loupe';
    main.append(h('h1', null, 'Not found'), h('p', null, 'No page at ', h('code', null, raw), '. ', h('a', { href: '#/' }, 'Go to the overview.')));
  } else {
    const ctx: ViewCtx = {
      params: match.m!.slice(1).filter((x) => x !== undefined),
      query: new URLSearchParams(qs),
      signal: mine.abort.signal,
      t0,
      health: loupe.health,
      onCleanup: (f) => mine.cleanups.push(f),
      setQuery: (q) => {
        const s = q.toString();
        history.replaceState(null, '', `#${path}${s ? '?' + s : ''}`);
      },
    };
    try {
      await match.view(main, ctx);
    } catch (e) {
      if ((e as Error)?.name === 'AbortError' || current !== mine) return;
      main.append(errorBox(e));
    }
  }
  if (current !== mine) return;
  if (focusMain) main.focus({ preventScroll: false });
  loupe.ready = true;
  main.dataset.ready = 'true';
}

window.addEventListener('hashchange', () => route());
route();
