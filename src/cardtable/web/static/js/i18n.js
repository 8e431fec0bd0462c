// The three catalogues (i18n/en.json, ko.json, ja.json) and the language choice.

export const LANGS = ['en', 'ko', 'ja'];
const STORE = 'ct.lang';
const catalogues = {};
let lang = 'en';

/** The language from the stored choice, else the browser's languages, else English. */
export function pickLanguage() {
  const stored = localStorage.getItem(STORE);
  if (LANGS.includes(stored)) return stored;
  const prefs = navigator.languages && navigator.languages.length ? navigator.languages : [navigator.language || 'en'];
  for (const p of prefs) {
    const base = String(p).toLowerCase().split('-')[0];
    if (LANGS.includes(base)) return base;
  }
  return 'en';
}

async function load(code) {
  if (!catalogues[code]) {
    const url = new URL(`../i18n/${code}.json`, import.meta.url);
    const res = await fetch(url);
    catalogues[code] = await res.json();
  }
  return catalogues[code];
}

/** Load the chosen language (and English as the fallback). */
export async function initI18n(code = pickLanguage()) {
  await load('en');
  await load(code);
  lang = code;
  document.documentElement.lang = code;
}

export async function setLanguage(code) {
  localStorage.setItem(STORE, code);
  await initI18n(code);
}

export function currentLanguage() { return lang; }

/** Does the catalogue have this key? */
export function has(key) { return key in (catalogues[lang] || {}) || key in (catalogues.en || {}); }

/** Translate key, filling {name} placeholders from vars. */
export function t(key, vars = {}) {
  let s = catalogues[lang]?.[key] ?? catalogues.en?.[key];
  if (s === undefined) return key;
  return s.replace(/\{(\w+)\}/g, (m, k) => (k in vars ? String(vars[k]) : m));
}

/** Translate key if it exists, else return fallback. */
export function tOr(key, fallback, vars) { return has(key) ? t(key, vars) : fallback; }
