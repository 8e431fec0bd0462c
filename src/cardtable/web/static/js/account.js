// Sign up, sign in, and the signed-in player's own page (/?account=1): their tables (a seat tied to the account
// comes back in any browser), their player page, "your turn" notifications in this browser (js/push.js), sign out,
// delete the account. accountNav() is the header's corner: "Sign in", or the player's name and the leaderboards.
import { h, fill, toast } from './util.js';
import { bdi } from './names.js';
import { saveSeat } from './api.js';
import { loadPlayersWords, tp, refusal, call, whoAmI } from './players_i18n.js';
import { pushState, enablePush, disablePush } from './push.js';

const playerUrl = (name) => `/?player=${encodeURIComponent(name)}`;

function go(navigate, href) {
  return (e) => { if (e.button === 0 && !e.ctrlKey && !e.metaKey) { e.preventDefault(); navigate(href); } };
}

/** The header's account links; fills itself once the catalogue and /api/me have answered. */
export function accountNav(navigate) {
  const box = h('span.acctnav');
  (async () => {
    await loadPlayersWords();
    const me = await whoAmI();
    fill(box,
      h('a', { href: '/?leaderboard=nerts', text: tp('nav.leaderboard'), onclick: go(navigate, '/?leaderboard=nerts') }),
      me ? h('a.me', { href: '/?account=1', title: tp('nav.account'), onclick: go(navigate, '/?account=1') }, bdi(me.name))
        : h('a.signin', { href: '/?account=1', text: tp('nav.sign_in'), onclick: go(navigate, '/?account=1') }));
  })();
  return box;
}

function credentialsForm(kind, navigate) {
  const id = (x) => `${kind}-${x}`;
  const name = h(`input#${id('name')}`, { type: 'text', name: 'name', required: true, maxlength: '24', autocomplete: 'username', autocapitalize: 'off', spellcheck: 'false' });
  const pass = h(`input#${id('password')}`, { type: 'password', name: 'password', required: true, minlength: kind === 'signup' ? '8' : undefined, maxlength: '200', autocomplete: kind === 'signup' ? 'new-password' : 'current-password' });
  const msg = h('p.formmsg', { role: 'alert' });
  const form = h(`form.acctform#${kind}-form`, {
    onsubmit: async (e) => {
      e.preventDefault();
      msg.textContent = '';
      const body = { name: name.value, password: pass.value };
      try {
        const me = await call('POST', kind === 'signup' ? '/api/accounts' : '/api/session', body);
        toast(tp(kind === 'signup' ? 'account.welcome' : 'account.welcome_back', { name: me.name }));
        navigate('/');
      } catch (err) {
        msg.textContent = refusal(err);
      }
    },
  },
  h('div.afield', {}, h('label', { for: id('name'), text: tp('account.name') }), name,
    kind === 'signup' ? h('small.hint', { text: tp('account.name_hint') }) : null),
  h('div.afield', {}, h('label', { for: id('password'), text: tp('account.password') }), pass,
    kind === 'signup' ? h('small.hint', { text: tp('account.password_hint') }) : null),
  msg,
  h(`button.primary#${kind}-submit`, { type: 'submit', text: tp(kind === 'signup' ? 'account.sign_up' : 'account.sign_in') }));
  return form;
}

function signedOut(main, navigate) {
  fill(main, h('div.acctpage', {},
    h('section.panel', { 'aria-labelledby': 'signup-h' },
      h('h2#signup-h', { text: tp('account.sign_up_title') }), h('p.muted', { text: tp('account.why') }),
      credentialsForm('signup', navigate)),
    h('section.panel', { 'aria-labelledby': 'signin-h' },
      h('h2#signin-h', { text: tp('account.sign_in_title') }), credentialsForm('signin', navigate),
      h('p.muted.small', { text: tp('account.guests') }))));
}

async function signedIn(main, navigate, me) {
  const tablesList = h('ul.mytables', {}, h('li.muted', { text: tp('common.loading') }));
  const del = h('button.danger#delete-account', {
    type: 'button', text: tp('account.delete'),
    onclick: async () => {
      if (!confirm(tp('account.delete_confirm', { name: me.name }))) return;
      try { await call('DELETE', '/api/me'); toast(tp('account.deleted')); navigate('/'); } catch (err) { toast(refusal(err), 'error'); }
    },
  });
  fill(main, h('div.acctpage', {},
    h('section.panel', {},
      h('h2', { text: tp('account.signed_in_as', { name: me.name }) }),
      h('p', {}, h('a#my-page', { href: playerUrl(me.name), text: tp('account.my_page'), onclick: go(navigate, playerUrl(me.name)) })),
      h('div.acctbuttons', {},
        h('button#sign-out', { type: 'button', text: tp('account.sign_out'),
          onclick: async () => { try { await call('DELETE', '/api/session'); } catch { /* signed out anyway */ } navigate('/'); } }),
        del)),
    h('section.panel', {}, h('h2', { text: tp('account.my_tables') }), tablesList),
    notificationsPanel()));
  try {
    const seats = await call('GET', '/api/me/seats');
    fill(tablesList, seats.length ? seats.map((s) => {
      saveSeat(s.table.id, s.seat, s.token);  // this browser now holds the seat too
      const href = `/?table=${encodeURIComponent(s.table.id)}`;
      return h('li', {}, h('a', { href, onclick: go(navigate, href), text: tp('account.table_line', { game: tp(`game.${s.table.game}`), seat: s.seat + 1, status: tp(`status.${s.table.status}`) }) }));
    }) : h('li.muted', { text: tp('account.no_tables') }));
  } catch {
    fill(tablesList, h('li.muted', { text: tp('common.unavailable') }));
  }
}

/** The "your turn" notifications switch of this browser (js/push.js): on subscribes, off unsubscribes. */
function notificationsPanel() {
  const msg = h('p.formmsg#push-msg', { role: 'status' });
  const box = h('input#push-toggle', { type: 'checkbox', disabled: true });
  const show = (state) => {
    box.checked = state === 'on';
    box.disabled = state === 'unsupported' || state === 'denied';
    msg.textContent = state === 'unsupported' ? tp('account.notify_unsupported')
      : state === 'denied' ? tp('account.notify_denied') : '';
  };
  box.addEventListener('change', async () => {
    const on = box.checked;
    box.disabled = true;
    msg.textContent = '';
    try {
      if (on) await enablePush(); else await disablePush();
      toast(tp(on ? 'account.notify_enabled' : 'account.notify_disabled'));
      show(await pushState());
    } catch (err) {
      show(await pushState().catch(() => 'off'));
      if (!msg.textContent) msg.textContent = typeof err.code === 'string' ? refusal(err) : tp('account.notify_failed');
    }
  });
  pushState().then(show, () => show('unsupported'));
  return h('section.panel#notifications', { 'aria-labelledby': 'notify-h' },
    h('h2#notify-h', { text: tp('account.notify_title') }),
    h('p.muted', { text: tp('account.notify_hint') }),
    h('label.pushswitch', { for: 'push-toggle' }, box, h('span', { text: tp('account.notify_on') })),
    msg);
}

/** The account page: sign up and sign in, or the signed-in player's own page. */
export function showAccount(main, navigate) {
  main.className = 'account-page';
  let live = true;
  (async () => {
    await loadPlayersWords();
    document.title = tp('account.title');
    const me = await whoAmI();
    if (!live) return;
    if (me) await signedIn(main, navigate, me); else signedOut(main, navigate);
  })();
  return () => { live = false; };
}
