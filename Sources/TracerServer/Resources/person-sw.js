"use strict";
// The person's page's service worker: a push says only that something changed ({"type":"status"});
// the notification says so in the browser's language, never what changed (a locked phone shows
// it), and opens the page, which fetches the status with its token.
const TEXTS = /*TEXTS*/ {};

function t(key) {
  const lang = String(self.navigator.language || "en").slice(0, 2).toLowerCase();
  return (TEXTS[lang] && TEXTS[lang][key]) || TEXTS.en[key] || key;
}

self.addEventListener("push", (event) => {
  event.waitUntil(self.registration.showNotification(t("push.title"), { body: t("push.body"), tag: "tracer-status", renotify: true }));
});

self.addEventListener("notificationclick", (event) => {
  event.notification.close();
  event.waitUntil(self.clients.matchAll({ type: "window", includeUncontrolled: true }).then((windows) => {
    for (const w of windows) if (new URL(w.url).pathname === "/me" && "focus" in w) return w.focus();
    return self.clients.openWindow("/me");
  }));
});
