// The three catalogues (i18n/en.json, ko.json, ja.json), the refusal wording catalogues (i18n/codes/*.json, a flat
// `code -> template` map) and the language choice. wordRefusal() words a server refusal or error in the page's
// language: cards as a player says them, piles by name, never a pile id (docs/protocol.md, "Refusal codes").

export const LANGS = ['en', 'ko', 'ja'];
const STORE = 'ct.lang';
const catalogues = {};
const codeCatalogues = {};
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
  if (!codeCatalogues[code]) {
    // the refusal wordings; a language without its file words refusals in English (or by reason)
    try {
      const res = await fetch(new URL(`../i18n/codes/${code}.json`, import.meta.url));
      codeCatalogues[code] = res.ok ? await res.json() : {};
    } catch { codeCatalogues[code] = {}; }
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

const pluralRules = {};

/**
 * The catalogue key for a count: `KEY_one` (or another CLDR category: `_zero`, `_two`, `_few`, `_many`) when
 * Intl.PluralRules of the page's language puts `n` in that category and the catalogue has such a key, else KEY
 * itself (the "other" form). English has `nerts.pile_label_one` "{pile}: {n} card" beside `nerts.pile_label`
 * "{pile}: {n} cards"; Korean and Japanese have one form (their rules always say "other"), so their `_one` keys,
 * kept so the three catalogues have the same keys, are never read.
 */
function pluralKey(key, n) {
  if (typeof n !== 'number' || !Number.isFinite(n)) return key;
  pluralRules[lang] ??= new Intl.PluralRules(lang);
  const form = `${key}_${pluralRules[lang].select(n)}`;
  return form in (catalogues[lang] || {}) ? form : key;
}

/** Translate key, filling {name} placeholders from vars; a numeric `vars.n` picks the plural form (pluralKey). */
export function t(key, vars = {}) {
  key = pluralKey(key, vars.n);
  let s = catalogues[lang]?.[key] ?? catalogues.en?.[key];
  if (s === undefined) return key;
  return s.replace(/\{(\w+)\}/g, (m, k) => (k in vars ? String(vars[k]) : m));
}

/** Translate key if it exists, else return fallback. */
export function tOr(key, fallback, vars) { return has(key) ? t(key, vars) : fallback; }

const STANDARD_SUITS = new Set(['S', 'H', 'D', 'C']);
const CREATURES = { A: 'crab', B: 'fish', C: 'octopus', D: 'starfish', E: 'turtle', F: 'jellyfish' };

/**
 * A card code as a player says it: 'KD' -> "king of diamonds" / "다이아몬드 K" / "ダイヤのK"; 'JK1' -> "joker";
 * in Enemy Anemone (game 'anemone') '7C' -> "Octopus 7". Unknown shapes are returned as they came.
 */
export function cardName(code, game = null) {
  if (typeof code !== 'string' || !code) return String(code ?? '');
  if (/^JK\d*$/.test(code)) return t('card.joker_name');
  const m = /^(\d+|[AJQK])([A-Z])$/.exec(code);
  if (!m) return code;
  const [, rank, suit] = m;
  if (game === 'anemone' || !STANDARD_SUITS.has(suit)) {
    const creature = CREATURES[suit];
    if (!creature) return code;
    return t('card.creature_name', { creature: t(`creature.${creature}`), rank });
  }
  return t('card.name', { rank: tOr(`rank.${rank}`, rank), suit: t(`suit.${suit}`) });
}

/** A suit letter by name: 'S' -> "spades"; in Enemy Anemone 'A' -> "Crab". */
export function suitName(suit, game = null) {
  if (game !== 'anemone' && STANDARD_SUITS.has(suit)) return t(`suit.${suit}`);
  return CREATURES[suit] ? t(`creature.${CREATURES[suit]}`) : String(suit ?? '');
}

/** A pile {kind, number} by name: "work pile 3", "Nerts pile", "foundation 2", "a new foundation". */
export function pileName(pile) {
  if (!pile || typeof pile !== 'object') return String(pile ?? '');
  const n = pile.number;
  switch (pile.kind) {
    case 'work': return n === null || n === undefined ? t('pile.a_work') : t('pile.work', { n });
    case 'foundation': return n === null || n === undefined ? t('pile.new_foundation') : t('pile.foundation', { n });
    case 'nerts': return t('pile.nerts');
    case 'waste': return t('pile.waste');
    case 'stock': return t('pile.stock');
    default: return String(pile.kind ?? '');
  }
}

function wordParam(key, value, game) {
  if (Array.isArray(value)) return value.map((v) => wordParam(key.replace(/s$/, ''), v, game)).join(t('list.sep'));
  if (/card$/i.test(key)) return cardName(value, game);
  if (/pile$/i.test(key)) return pileName(value);
  if (/suit$/i.test(key)) return suitName(value, game);
  return String(value ?? '');
}

/** Is there a wording for this refusal code (in the page's language or English)? */
export function hasCode(code) {
  return !!code && (code in (codeCatalogues[lang] || {}) || code in (codeCatalogues.en || {}));
}

/**
 * Word a refusal or error {code, params, reason} in the page's language. Params whose key ends in `card` are
 * card codes, in `pile` {kind, number} piles, in `suit` suit letters; the rest are shown as they are.
 * game ('nerts' | 'anemone') says how card codes read. Falls back to the English `reason` when the code has no
 * wording anywhere, and to "" when there is neither.
 */
export function wordRefusal(msg, game = null) {
  if (!msg) return '';
  const code = msg.code;
  const tpl = code ? (codeCatalogues[lang]?.[code] ?? codeCatalogues.en?.[code]) : undefined;
  if (tpl === undefined) return msg.reason ?? msg.detail ?? '';
  const params = msg.params || {};
  return tpl.replace(/\{(\w+)\}/g, (m, k) => (k in params ? wordParam(k, params[k], game) : m));
}

/** Every refusal code the catalogues word (English catalogue's keys). */
export function refusalCodes() { return Object.keys(codeCatalogues.en || {}); }
