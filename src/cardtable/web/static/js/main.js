// Entry point: loads the stylesheet and the catalogues, draws the header and routes on the query string:
//   /                  lobby            /?table=ID         a table (your seat, or join, or watch)
//   /?table=ID&watch=1 watch a table    /?replay=ID        replay a finished game
//   /?howto=nerts      how to play (nerts | anemone)
//   /?account=1        sign up, sign in, your account   /?leaderboard=GAME  a leaderboard   /?player=NAME  a player
//   /?daily=GAME       the daily deal (anemone | nerts; &date=YYYY-MM-DD: that day's standings)
import { h, fill } from './util.js';
import { initI18n, setLanguage, currentLanguage, LANGS, t, wordRefusal, refusalCodes, cardName } from './i18n.js';
import { navigate, setRouter } from './nav.js';
import { accountNav } from './account.js';

const css = document.createElement('link');
css.rel = 'stylesheet';
css.href = new URL('../css/app.css', import.meta.url).href;
document.head.append(css);

let cleanup = null;


function header() {
  const langSel = h('select#lang', {
    'aria-label': t('nav.language'),
    onchange: async (e) => { await setLanguage(e.target.value); route(); },
  }, LANGS.map((code) => h('option', { value: code, selected: code === currentLanguage(), text: t(`lang.${code}`) })));
  const link = (href, key, cls = '') => h('a' + cls, {
    href, text: t(key),
    onclick: (e) => { if (e.button === 0 && !e.ctrlKey && !e.metaKey) { e.preventDefault(); navigate(href); } },
  });
  return h('header.top', {},
    h('a.brand', { href: '/', onclick: (e) => { e.preventDefault(); navigate('/'); } },
      h('span.logo', { 'aria-hidden': 'true', text: '♠♥' }), t('app.title')),
    h('nav', {}, link('/', 'nav.lobby'), link('/?howto=nerts', 'nav.howto_nerts', '.long'),
      link('/?howto=anemone', 'nav.howto_anemone', '.long'), link('/?howto=nerts', 'nav.rules', '.short'),
      accountNav(navigate),
      h('label.langpick', {}, h('span.sr', { text: t('nav.language') }), langSel)));
}

async function route() {
  if (cleanup) { try { cleanup(); } catch (e) { console.error(e); } cleanup = null; }
  const q = new URLSearchParams(location.search);
  const app = document.getElementById('app');
  const main = h('main#page');
  fill(app, header(), main);
  document.title = t('app.title');
  let mod;
  if (q.get('table')) {
    mod = await import('./table.js');
    cleanup = mod.showTable(main, q.get('table'), { watch: q.get('watch') === '1' });
  } else if (q.get('replay')) {
    mod = await import('./replay.js');
    cleanup = mod.showReplay(main, q.get('replay'));
  } else if (q.get('daily')) {
    mod = await import('./daily.js');
    cleanup = mod.showDaily(main, q.get('daily'), q.get('date'));
  } else if (q.get('howto')) {
    mod = await import('./howto.js');
    cleanup = mod.showHowto(main, q.get('howto'));
  } else if (q.get('account') || q.get('leaderboard') || q.get('player')) {
    mod = await import(q.get('account') ? './account.js' : q.get('leaderboard') ? './leaderboard.js' : './player.js');
    cleanup = q.get('account') ? mod.showAccount(main, navigate)
      : q.get('leaderboard') ? mod.showLeaderboard(main, q.get('leaderboard'), navigate) : mod.showPlayer(main, q.get('player'), navigate);
  } else {
    mod = await import('./lobby.js');
    cleanup = mod.showLobby(main);
  }
}

setRouter(route);
/** Test hook: the wording functions, to check every refusal code in every language from the page. */
window.__ctI18n = { wordRefusal, refusalCodes, cardName, setLanguage };
window.addEventListener('popstate', route);

await initI18n();
route();
