// The words of the account, leaderboard and player pages: their own catalogues (i18n/players/{en,ko,ja}.json),
// in the language the page is shown in, English as the fallback; and their stylesheet (css/players.css).
import { currentLanguage, refusalCodes, wordRefusal } from './i18n.js';
import { loadStyles } from './util.js';

const catalogues = {};

async function load(code) {
  if (!catalogues[code]) {
    try {
      const res = await fetch(new URL(`../i18n/players/${code}.json`, import.meta.url));
      catalogues[code] = res.ok ? await res.json() : {};
    } catch { catalogues[code] = {}; }
  }
}

/** Load the catalogues of the current language and English, and the stylesheet (once). */
export async function loadPlayersWords() {
  loadStyles('players');
  await Promise.all([load('en'), load(currentLanguage())]);
}

/** Translate key, filling {name} placeholders from vars. */
export function tp(key, vars = {}) {
  const s = catalogues[currentLanguage()]?.[key] ?? catalogues.en?.[key];
  if (s === undefined) return key;
  return s.replace(/\{(\w+)\}/g, (m, k) => (k in vars ? String(vars[k]) : m));
}

/** The words for a refusal from the accounts API ({detail, code, params}): the central catalogues
 * (i18n/codes, every registered code), else these pages' own words (`code.CODE`), else its English detail. */
export function refusal(err) {
  if (err.code && refusalCodes().includes(err.code)) {
    return wordRefusal({ code: err.code, params: err.params || {}, reason: err.message });
  }
  const key = `code.${err.code}`;
  const s = catalogues[currentLanguage()]?.[key] ?? catalogues.en?.[key];
  return s === undefined ? (err.message || String(err)) : tp(key, err.params || {});
}

/** A number with at most `digits` decimals, in the page's language. */
export function num(x, digits = 1) {
  return Number(x).toLocaleString(currentLanguage(), { maximumFractionDigits: digits, minimumFractionDigits: 0 });
}

/** Calls to the accounts and players API: JSON in and out; a refusal throws an Error with code and params. */
export async function call(method, path, body) {
  const res = await fetch(path, {
    method, credentials: 'same-origin',
    headers: body === undefined ? {} : { 'Content-Type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  let data = null;
  try { data = await res.json(); } catch { data = null; }
  if (!res.ok) {
    const detail = data && typeof data.detail === 'string' ? data.detail : `HTTP ${res.status}`;
    const err = new Error(detail);
    err.status = res.status;
    err.code = data && data.code ? data.code : (res.status === 422 ? 'request.invalid' : 'http.error');
    err.params = (data && data.params) || { status: res.status };
    throw err;
  }
  return data;
}

/** The signed-in account {id, name}, or null. */
export async function whoAmI() {
  try { return (await call('GET', '/api/session')).account; } catch { return null; }
}
