// Web Push in the page (docs/protocol.md, "Notifications (Web Push)"): register the service worker (/sw.js, scope
// the whole site), ask the player's permission, subscribe with the server's VAPID key and send the subscription to
// the server; and the way back. The worker itself is ../sw.js.
import { call } from './players_i18n.js';
import { currentLanguage } from './i18n.js';

const WORKER = '/sw.js';

/** Whether this browser offers notifications by push (an https page, or localhost). */
export function pushSupported() {
  return window.isSecureContext && 'serviceWorker' in navigator && 'PushManager' in window && 'Notification' in window;
}

/** Register the service worker at the site's root; its registration once active. */
export async function registerWorker() {
  await navigator.serviceWorker.register(WORKER, { scope: '/' });
  return navigator.serviceWorker.ready;
}

/** The server's base64url VAPID key as the bytes PushManager.subscribe takes. */
function keyBytes(b64) {
  const s = atob(b64.replace(/-/g, '+').replace(/_/g, '/') + '='.repeat((4 - (b64.length % 4)) % 4));
  return Uint8Array.from(s, (c) => c.charCodeAt(0));
}

function sameKey(buffer, bytes) {
  if (!buffer) return false;
  const a = new Uint8Array(buffer);
  return a.length === bytes.length && a.every((x, i) => x === bytes[i]);
}

/** This browser's current push subscription, or null. */
async function currentSubscription() {
  if (!pushSupported()) return null;
  const reg = await navigator.serviceWorker.getRegistration('/');
  return reg ? reg.pushManager.getSubscription() : null;
}

/** 'unsupported', 'denied' (the player blocked notifications for the site), 'on' or 'off' in this browser. */
export async function pushState() {
  if (!pushSupported()) return 'unsupported';
  if (Notification.permission === 'denied') return 'denied';
  return (await currentSubscription()) ? 'on' : 'off';
}

/** Switch "your turn" notifications on in this browser for the signed-in player: register the worker, ask
 * permission, subscribe with the server's key, send the subscription with the page's language. Throws an Error
 * with code 'push.denied' when the player refuses, or the server's refusal ({code, params}). */
export async function enablePush() {
  const reg = await registerWorker();
  const permission = await Notification.requestPermission();
  if (permission !== 'granted') {
    const err = new Error('notifications were not allowed');
    err.code = 'push.denied';
    throw err;
  }
  const key = keyBytes((await call('GET', '/api/push/key')).key);
  let sub = await reg.pushManager.getSubscription();
  if (sub && !sameKey(sub.options.applicationServerKey, key)) { await sub.unsubscribe(); sub = null; }
  if (!sub) sub = await reg.pushManager.subscribe({ userVisibleOnly: true, applicationServerKey: key });
  await call('POST', '/api/me/push', { ...sub.toJSON(), lang: currentLanguage() });
}

/** Switch them off in this browser: the server forgets this browser's subscription and the browser drops it
 * (with everywhere: every browser's subscription of the account). */
export async function disablePush({ everywhere = false } = {}) {
  const sub = await currentSubscription();
  if (everywhere || !sub) await call('DELETE', '/api/me/push');
  else await call('DELETE', `/api/me/push?endpoint=${encodeURIComponent(sub.endpoint)}`);
  if (sub) await sub.unsubscribe();
}
