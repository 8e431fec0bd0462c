// How to play: the rules pages (docs/rules/*.md) in the reader's language.
// Each section is howto.GAME.N.title and howto.GAME.N.body in the catalogues; a body line starting "- "
// is a bullet, other lines are paragraphs.
import { h, fill } from './util.js';
import { t, has } from './i18n.js';
import { creatureCard, suitSymbol, CREATURE_SUITS, standardCard, anemoneChip } from './cards.js';
import { navigate } from './nav.js';
import { api } from './api.js';
import { botLabel, botSentence } from './names.js';

function body(text) {
  const out = [];
  let list = null;
  for (const line of text.split('\n')) {
    if (line.startsWith('- ')) {
      if (!list) { list = h('ul'); out.push(list); }
      list.append(h('li', { text: line.slice(2) }));
    } else if (line.trim()) {
      list = null;
      out.push(h('p', { text: line }));
    }
  }
  return out;
}

export function showHowto(main, game) {
  if (game !== 'nerts' && game !== 'anemone') game = 'nerts';
  main.className = 'howto-page';
  const sections = [];
  for (let n = 1; has(`howto.${game}.${n}.title`); n++) {
    sections.push(h('section.rules', {}, h('h3', { text: t(`howto.${game}.${n}.title`) }), body(t(`howto.${game}.${n}.body`))));
  }
  const illus = game === 'anemone'
    ? h('div.suitkey', {}, h('h3', { text: t('howto.anemone.suits') }),
      h('div.suitgrid', {}, Object.entries(CREATURE_SUITS).map(([s, info], i) => h('div.suitcell', {},
        creatureCard(`${[3, 5, 8, 7, 2, 10][i]}${s}`),
        h('span.sname', {}, suitSymbol(s), ` ${s} · ${t(`creature.${info.creature}`)}`),
        h('span.scol', { text: t(`colour.${info.creature}`) })))),
      h('div.suitrow', {}, anemoneChip(1), anemoneChip(2), h('span.muted', { text: t('howto.anemone.chips') })))
    : h('div.suitkey', {}, h('div.suitrow', {}, ['AS', '2H', '3S', 'KD', 'QC'].map((c, i) => standardCard(c, { pack: i % 2 }))),
      h('p.muted', { text: t('howto.nerts.cards_note') }));
  // Nerts: every bot level the server offers, each in a sentence (docs/rules/nerts.md says nothing of bots).
  const bots = game === 'nerts' ? h('section.rules.botlevels', {}, h('h3', { text: t('howto.nerts.bots.title') }),
    h('p', { text: t('howto.nerts.bots.intro') }), h('dl.botlist')) : null;
  if (bots) {
    api.games().then((games) => {
      const info = games.find((g) => g.game === 'nerts');
      fill(bots.querySelector('dl'), (info?.bots || []).filter((b) => botSentence(b.spec)).map((b) => [
        h('dt', { dataset: { bot: b.spec }, text: botLabel(b.spec, b.level) }),
        h('dd', { dataset: { bot: b.spec }, text: botSentence(b.spec) })]).flat());
    }).catch(() => bots.remove());
  }
  fill(main, h('article.panel.howto', {},
    h('div.tabs', {},
      ['nerts', 'anemone'].map((g) => h('button' + (g === game ? '.on' : ''), { type: 'button', onclick: () => navigate(`/?howto=${g}`) }, t(`game.${g}`)))),
    h('h2', { text: t(`howto.${game}.title`) }),
    h('p.lead', { text: t(`howto.${game}.intro`) }),
    illus,
    sections, bots));
  return () => {};
}
