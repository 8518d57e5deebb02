// Same-origin calls to `/api/v1/...` with the session's bearer token, exact big integers, and
// errors as `ApiError` (status, code, sentence, log) — the API's `{"error","code"}` shape.

import { parseJson } from './json';
import type { ErrorBody } from './types';

const TOKEN_KEY = 'loupe.token';

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly log: string[] = [],
  ) {
    super(message);
  }
}

export function getToken(): string {
  try {
    return sessionStorage.getItem(TOKEN_KEY) ?? '';
  } catch {
    return '';
  }
}

export function setToken(token: string): void {
  try {
    if (token) sessionStorage.setItem(TOKEN_KEY, token.trim());
    else sessionStorage.removeItem(TOKEN_KEY);
  } catch {
    /* storage disabled: the token lives only as long as this call */
  }
  window.dispatchEvent(new CustomEvent('loupe:token'));
}

function authHeaders(extra?: Record<string, string>): Record<string, string> {
  const h: Record<string, string> = { Accept: 'application/json', ...extra };
  const t = getToken();
  if (t) h.Authorization = `Bearer ${t}`;
  return h;
}

/** Builds `/api/v1/<path>?k=v…`, leaving out empty values. */
export function apiUrl(path: string, query?: Record<string, string | number | boolean | null | undefined>): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(query ?? {})) {
    if (v === undefined || v === null || v === '' || v === false) continue;
    q.set(k, String(v));
  }
  const s = q.toString();
  return `/api/v1/${path}${s ? '?' + s : ''}`;
}

function errorFrom(status: number, statusText: string, text: string): ApiError {
  let code = `http_${status}`;
  let msg = statusText || 'request failed';
  let log: string[] = [];
  try {
    // Checked at run time too: a proxy in between may answer with anything.
    const body = parseJson<Partial<Record<keyof ErrorBody, unknown>>>(text);
    if (body && typeof body.error === 'string') msg = body.error;
    if (body && typeof body.code === 'string') code = body.code;
    if (body && Array.isArray(body.log)) log = body.log.map((l) => (typeof l === 'string' ? l : JSON.stringify(l)));
  } catch {
    if (text.trim()) msg = text.trim().slice(0, 300);
  }
  const err = new ApiError(status, code, msg, log);
  if (status === 401) window.dispatchEvent(new CustomEvent('loupe:unauthorized', { detail: err }));
  return err;
}

export interface RequestOptions {
  method?: string;
  body?: string;
  signal?: AbortSignal;
  headers?: Record<string, string>;
}

async function send(url: string, opts: RequestOptions = {}): Promise<Response> {
  let res: Response;
  try {
    res = await fetch(url, {
      method: opts.method ?? 'GET',
      body: opts.body,
      signal: opts.signal,
      headers: authHeaders(opts.headers),
      credentials: 'same-origin',
    });
  } catch (e) {
    if ((e as Error).name === 'AbortError') throw e;
    throw new ApiError(0, 'network', `cannot reach the Loupe server: ${(e as Error).message}`);
  }
  if (!res.ok) throw errorFrom(res.status, res.statusText, await res.text());
  return res;
}

/** GET/POST JSON, big integers kept exact. */
export async function api<T>(url: string, opts: RequestOptions = {}): Promise<T> {
  const res = await send(url, opts);
  const text = await res.text();
  return (text ? parseJson<T>(text) : (undefined as T));
}

export async function apiBlob(url: string, opts: RequestOptions = {}): Promise<Blob> {
  return (await send(url, opts)).blob();
}

/** `/metrics` (Prometheus text; no token needed). */
export async function metricsText(signal?: AbortSignal): Promise<string> {
  const res = await fetch('/metrics', { signal });
  if (!res.ok) throw new ApiError(res.status, `http_${res.status}`, `GET /metrics: ${res.statusText}`);
  return res.text();
}

/** The value of an unlabelled Prometheus sample, or null. */
export function promValue(text: string, name: string): number | null {
  const re = new RegExp(`^${name}(?:\\{[^}]*\\})?\\s+([-+0-9.eE]+|NaN)\\s*$`, 'm');
  const m = re.exec(text);
  return m ? Number(m[1]) : null;
}

/** PUT with upload progress (XMLHttpRequest, since fetch has no upload progress). */
export function uploadWithProgress<T>(url: string, file: Blob, contentType: string, onProgress: (loaded: number, total: number) => void): Promise<{ status: number; body: T }> {
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    xhr.open('PUT', url);
    for (const [k, v] of Object.entries(authHeaders({ 'Content-Type': contentType }))) xhr.setRequestHeader(k, v);
    xhr.upload.onprogress = (e) => onProgress(e.loaded, e.lengthComputable ? e.total : file.size);
    xhr.onload = () => {
      if (xhr.status >= 200 && xhr.status < 300) {
        try {
          resolve({ status: xhr.status, body: parseJson<T>(xhr.responseText) });
        } catch (e) {
          reject(new ApiError(xhr.status, 'bad_response', `unreadable answer: ${(e as Error).message}`));
        }
      } else {
        reject(errorFrom(xhr.status, xhr.statusText, xhr.responseText));
      }
    };
    xhr.onerror = () => reject(new ApiError(0, 'network', 'upload failed: cannot reach the Loupe server'));
    xhr.onabort = () => reject(new ApiError(0, 'aborted', 'upload cancelled'));
    xhr.send(file);
  });
}

/** Runs `tasks` with at most `limit` in flight. */
export async function pool<T>(items: T[], limit: number, task: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const item = items[next++];
      await task(item);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
}
