// Navigation between pages without a reload. main.js registers its router here; every view imports
// navigate() from this module (never from main.js), so no view depends on the entry point.

let router = null;

/** main.js calls this once with the function that draws the page for the current address. */
export function setRouter(fn) { router = fn; }

/** Go to url (same origin) and draw its page; a full load when no router is set yet. */
export function navigate(url) {
  if (!router) { location.href = url; return; }
  history.pushState(null, '', url);
  router();
}
