// Sound cues and the "your turn" title (issue 27, "Sound"): short tones for your turn, a trick won (Enemy Anemone),
// Nerts called and a refused move, made with the Web Audio API (synthesized: no audio file is shipped or fetched).
// Off until the player turns them on (one toggle in the ☰ menu, remembered by the browser in localStorage `ct.sound`).
// While the tab is in the background and it is your turn, the page title says so ("Your turn · cardtable"); it comes
// back when the tab is seen again or the turn has passed.
import { h } from './util.js';
import { t } from './i18n.js';

const KEY = 'ct.sound';

/** Whether this browser plays the table's sounds (off until turned on). */
export function soundOn() { return localStorage.getItem(KEY) === 'on'; }

/** Turn the sounds on or off in this browser (and every toggle on the page with it). */
export function setSound(on) {
  if (on) localStorage.setItem(KEY, 'on'); else localStorage.removeItem(KEY);
  if (on) audio(); // made (or resumed) inside the click that turned it on: browsers let a page sound after a gesture
  for (const el of document.querySelectorAll('input.soundtoggle')) el.checked = on;
}

/**
 * Each cue's notes: [frequency Hz, start s, length s, waveform]. Your turn: two rising notes; a trick: a short
 * pluck (higher when you won it); Nerts: a rising arpeggio; refused: a low buzz.
 */
const CUES = {
  turn: [[660, 0, 0.12, 'sine'], [880, 0.12, 0.18, 'sine']],
  trick: [[392, 0, 0.1, 'triangle'], [523, 0.07, 0.14, 'triangle']],
  trick_mine: [[523, 0, 0.1, 'triangle'], [784, 0.07, 0.18, 'triangle']],
  nerts: [[523, 0, 0.09, 'square'], [659, 0.09, 0.09, 'square'], [784, 0.18, 0.09, 'square'], [1047, 0.27, 0.25, 'square']],
  refused: [[196, 0, 0.16, 'sawtooth'], [147, 0.12, 0.14, 'sawtooth']],
};
const VOLUME = 0.12;

let context = null;

/** The page's AudioContext, made on first use and resumed if the browser suspended it; null without Web Audio. */
function audio() {
  try {
    const Ctx = window.AudioContext || window.webkitAudioContext;
    if (!Ctx) return null;
    context ??= new Ctx();
    if (context.state === 'suspended') context.resume().catch(() => {});
    return context;
  } catch { return null; }
}

// A page opened with the sounds already on may not sound before the player's first click or key (browsers' autoplay
// rule): the first of them wakes the AudioContext.
const wake = () => { if (soundOn()) audio(); };
document.addEventListener('pointerdown', wake, { capture: true, passive: true });
document.addEventListener('keydown', wake, { capture: true });

/** Test and debugging hook: the latest cues asked for, with whether they sounded (`{kind, played}`, at most 20). */
const heard = (window.__ctCues = []);

/** Play cue `kind` (`turn`, `trick`, `trick_mine`, `nerts`, `refused`) if the sounds are on. */
export function cue(kind) {
  const on = soundOn() && kind in CUES;
  heard.push({ kind, played: on });
  if (heard.length > 20) heard.shift();
  if (!on) return;
  const ac = audio();
  if (!ac) return;
  const now = ac.currentTime + 0.01;
  for (const [freq, start, length, wave] of CUES[kind]) {
    const osc = ac.createOscillator();
    const gain = ac.createGain();
    osc.type = wave;
    osc.frequency.value = freq;
    // a short attack and an exponential fall: no click at either end
    gain.gain.setValueAtTime(0.0001, now + start);
    gain.gain.exponentialRampToValueAtTime(VOLUME, now + start + 0.015);
    gain.gain.exponentialRampToValueAtTime(0.0001, now + start + length);
    osc.connect(gain).connect(ac.destination);
    osc.start(now + start);
    osc.stop(now + start + length + 0.02);
  }
}

/** The ☰ menu's toggle: a checkbox, off until turned on, shared by every toggle on the page. */
export function soundToggle() {
  const input = h('input#sound-toggle.soundtoggle', { type: 'checkbox', checked: soundOn(), onchange: () => setSound(input.checked) });
  return h('label.menutoggle', { for: 'sound-toggle' }, input, h('span', { text: t('sound.toggle') }));
}

/**
 * The cues of one table page, fed every snapshot and update (table.js): your turn (Enemy Anemone: the seat to play
 * is yours), a trick won, Nerts called; and the title while your turn waits in a background tab.
 * ctx: { seat (number or null), game ('nerts' | 'anemone') }.
 */
export class TableCues {
  constructor({ seat, game }) {
    this.seat = seat;
    this.game = game;
    this.myTurn = null; // unknown until the first view
    this.title = null; // the page's own title while ours shows
    this.onVisible = () => this.showTitle();
    document.addEventListener('visibilitychange', this.onVisible);
  }

  /** Whether `view` waits for this seat (Enemy Anemone; Nerts has no turns). */
  turnIn(view) { return this.game === 'anemone' && this.seat !== null && !!view && !view.over && view.turn === this.seat; }

  snapshot(msg) { this.see(msg.view, []); }

  update(msg) { this.see(msg.view, msg.events || []); }

  see(view, events) {
    for (const e of events) {
      if (e.type === 'trick_won' && this.game === 'anemone') cue(e.winner === this.seat ? 'trick_mine' : 'trick');
      else if (e.type === 'nerts' && this.game === 'nerts') cue('nerts');
    }
    const mine = this.turnIn(view);
    if (mine && this.myTurn === false) cue('turn'); // a turn that begins (not one found on arriving)
    this.myTurn = mine;
    this.showTitle();
  }

  /** "Your turn · cardtable" while the tab is hidden and the turn is yours; the page's own title otherwise. */
  showTitle() {
    const want = this.myTurn && document.hidden;
    if (want && this.title === null) {
      this.title = document.title;
      document.title = `${t('anemone.your_turn')} · ${t('app.title')}`;
    } else if (!want && this.title !== null) {
      document.title = this.title;
      this.title = null;
    }
  }

  destroy() {
    document.removeEventListener('visibilitychange', this.onVisible);
    this.myTurn = false;
    this.showTitle();
  }
}
