// The HTTP lobby API (docs/protocol.md, "HTTP lobby") and the seat tokens kept in localStorage.
import { wordRefusal } from './i18n.js';

/** An HTTP error answer: status, the English detail (message), and the refusal code and params when given. */
export class ApiError extends Error {
  constructor(status, detail, code = null, params = {}) { super(detail); this.status = status; this.code = code; this.params = params; }
}

/** An error from the API (or anything else) worded in the page's language. */
export function errorText(err, game = null) {
  if (err && err.code) return wordRefusal({ code: err.code, params: err.params, reason: err.message }, game);
  return err?.message ?? String(err);
}

/** This browser's lobby visitor id (localStorage `ct.visitor`), sent as `X-Visitor` so that two people behind one
 * address count as two in the lobby (docs/protocol.md, "Play now": whether a new table waits for another person). */
function visitor() {
  let id = localStorage.getItem('ct.visitor');
  if (!id) { id = Array.from(crypto.getRandomValues(new Uint8Array(12)), (b) => b.toString(16).padStart(2, '0')).join(''); localStorage.setItem('ct.visitor', id); }
  return { 'X-Visitor': id };
}

/** One page of a paged list (docs/protocol.md: `limit`, `cursor`, the `X-Next-Cursor` header):
 * {rows, next}, `next` the cursor of the following page or null when this is the last. */
async function page(path, limit, cursor) {
  const q = new URLSearchParams(path.split('?')[1] || '');
  q.set('limit', String(limit));
  if (cursor) q.set('cursor', cursor);
  const res = await fetch(`${path.split('?')[0]}?${q}`, { headers: visitor() });
  let data = null;
  try { data = await res.json(); } catch { data = null; }
  if (!res.ok) throw new ApiError(res.status, data?.detail || `HTTP ${res.status}`, data?.code ?? null, data?.params || {});
  return { rows: data || [], next: res.headers.get('X-Next-Cursor') };
}

/** One JSON call to the API (the visitor's X-Visitor header sent); a refusal throws an ApiError with its status,
 * code and params. */
export async function call(method, path, body) {
  const res = await fetch(path, {
    method,
    headers: body === undefined ? visitor() : { ...visitor(), 'Content-Type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  let data = null;
  try { data = await res.json(); } catch { data = null; }
  if (!res.ok) {
    let detail = data && data.detail;
    if (Array.isArray(detail)) detail = detail.map((d) => d.msg || JSON.stringify(d)).join('; ');
    throw new ApiError(res.status, detail || `HTTP ${res.status}`, data?.code ?? null, data?.params || {});
  }
  return data;
}

export const api = {
  games: () => call('GET', '/api/games'),
  tables: (status = 'open') => call('GET', `/api/tables?status=${encodeURIComponent(status)}`),
  table: (id) => call('GET', `/api/tables/${encodeURIComponent(id)}`),
  create: (body) => call('POST', '/api/tables', body),
  join: (id, body) => call('POST', `/api/tables/${encodeURIComponent(id)}/join`, body),
  leave: (id, token) => call('POST', `/api/tables/${encodeURIComponent(id)}/leave`, { token }),
  play: (body) => call('POST', '/api/play', body),
  start: (id, token) => call('POST', `/api/tables/${encodeURIComponent(id)}/start`, { token }),
  /** Play again from a finished table: {table, seat, token} at the next table (docs/protocol.md, "Play again"). */
  again: (id, token) => call('POST', `/api/tables/${encodeURIComponent(id)}/again`, { token }),
  replay: (id) => call('GET', `/api/tables/${encodeURIComponent(id)}/replay`),
  finished: () => call('GET', '/api/finished'),
  /** One page of tables with `status` (open, playing, finished): {rows, next}. */
  tablesPage: (status, limit, cursor = null) => page(status === 'finished' ? '/api/finished'
    : `/api/tables?status=${encodeURIComponent(status)}`, limit, cursor),
};

/** The seat held at table id by this browser: {seat, token} or null. */
export function getSeat(id) {
  try { return JSON.parse(localStorage.getItem(`ct.seat.${id}`)); } catch { return null; }
}
export function saveSeat(id, seat, token) {
  localStorage.setItem(`ct.seat.${id}`, JSON.stringify({ seat, token }));
}
export function forgetSeat(id) { localStorage.removeItem(`ct.seat.${id}`); }

export function getName() { return localStorage.getItem('ct.name') || ''; }
export function saveName(name) { localStorage.setItem('ct.name', name); }
