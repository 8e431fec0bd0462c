// The service worker of the "your turn" notifications (docs/protocol.md, "Notifications (Web Push)"). Served at
// /sw.js, so its scope is the whole site. It shows each push as a notification (the payload's title and body,
// worded by the server in the player's language; its tag replaces an older one of the same table) and, when the
// notification is clicked, focuses a tab already on the payload's url or opens one. It caches nothing.

self.addEventListener('install', () => { self.skipWaiting(); });
self.addEventListener('activate', (event) => { event.waitUntil(self.clients.claim()); });

/** A url of this site only (a payload cannot send the player elsewhere); '/' for anything else. */
function ownUrl(url) {
  try {
    const u = new URL(url || '/', self.location.origin);
    return u.origin === self.location.origin ? u.href : new URL('/', self.location.origin).href;
  } catch { return new URL('/', self.location.origin).href; }
}

function payload(event) {
  if (!event.data) return {};
  try { return event.data.json() || {}; } catch { return { body: event.data.text() }; }
}

self.addEventListener('push', (event) => {
  const msg = payload(event);
  const options = { body: String(msg.body || ''), data: { url: ownUrl(msg.url) } };
  if (msg.tag) { options.tag = String(msg.tag); options.renotify = true; }
  event.waitUntil(self.registration.showNotification(String(msg.title || 'cardtable'), options));
});

self.addEventListener('notificationclick', (event) => {
  event.notification.close();
  const url = ownUrl(event.notification.data && event.notification.data.url);
  event.waitUntil((async () => {
    const tabs = await self.clients.matchAll({ type: 'window', includeUncontrolled: true });
    const there = tabs.find((c) => c.url === url);
    if (there) return there.focus();
    const ours = tabs.find((c) => c.url.startsWith(self.location.origin + '/'));
    if (ours) {
      try {
        const moved = await ours.navigate(url);  // only for a tab this worker controls
        if (moved) return moved.focus();
      } catch { /* not controlled: open a new one */ }
    }
    return self.clients.openWindow(url);
  })());
});
