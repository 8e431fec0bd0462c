// The leaderboard of one game (/?leaderboard=nerts): people and bot levels by ordinal (mu - 3 sigma); a bot level is
// named as everywhere else (names.js's botName: "Bot (Intermediate)").
import { h, fill } from './util.js';
import { loadPlayersWords, tp, refusal, call, num, whoAmI } from './players_i18n.js';
import { playerLabel } from './player.js';
import { bdi } from './names.js';

export const GAMES = ['nerts', 'anemone'];

/** Draw the leaderboard of `game` into main. */
export function showLeaderboard(main, game, navigate) {
  main.className = 'leaderboard-page';
  if (!GAMES.includes(game)) game = 'nerts';
  let live = true;
  (async () => {
    await loadPlayersWords();
    document.title = tp('board.title', { game: tp(`game.${game}`) });
    const body = h('div.boardbody', {}, h('p.muted', { text: tp('common.loading') }));
    const tabs = h('div.segmented', { role: 'tablist', 'aria-label': tp('board.game') }, GAMES.map((g) => h('button' + (g === game ? '.on' : ''), {
      type: 'button', role: 'tab', 'aria-selected': String(g === game), dataset: { game: g }, text: tp(`game.${g}`),
      onclick: () => navigate(`/?leaderboard=${g}`),
    })));
    fill(main, h('section.panel.board', {}, h('div.boardhead', {}, h('h2', { text: tp('board.heading') }), tabs), body));
    let rows, me;
    try { [rows, me] = await Promise.all([call('GET', `/api/leaderboard?game=${encodeURIComponent(game)}&limit=50`), whoAmI()]); } catch (err) {
      fill(body, h('p.error', { text: refusal(err) }));
      return;
    }
    if (!live) return;
    if (!rows.length) { fill(body, h('p.muted', { text: tp('board.empty') })); return; }
    const href = (name) => `/?player=${encodeURIComponent(name)}`;
    fill(body, h('table.boardtable', {},
      h('thead', {}, h('tr', {}, h('th.num', { text: tp('board.rank') }), h('th', { text: tp('board.player') }),
        h('th.num', { text: tp('board.rating') }), h('th.num.wide', { text: tp('board.matches') }), h('th.num.wide', { text: tp('board.wins') }))),
      h('tbody', {}, rows.map((r) => h('tr' + (me && r.kind === 'person' && r.name === me.name ? '.mine' : ''), { dataset: { name: r.name } },
        h('td.num', { text: String(r.rank) }),
        h('td.name', {}, h('a', { href: href(r.name), onclick: (e) => { e.preventDefault(); navigate(href(r.name)); } }, bdi(playerLabel(r.name, r.kind)))),
        h('td.num.rating', { text: num(r.ordinal, 1) }),
        h('td.num.wide', { text: String(r.matches) }), h('td.num.wide', { text: String(r.wins) }))))),
    h('p.muted.small', { text: tp('board.explain') }));
  })();
  return () => { live = false; };
}
