// The nav's notification bell: keeps its unread count fresh without a reload by polling a tiny
// JSON view every 15 s while the tab is visible. A hidden tab polls nothing (it polls once on
// coming back); a failed poll leaves the count as it was and the next one waits longer.
(function () {
  "use strict";
  var bell = document.getElementById("notification-bell");
  var count = bell && bell.querySelector(".bell-count");
  if (!count || !bell.dataset.url || !window.fetch) {
    return;
  }
  var INTERVAL = 15000;
  var MAX_INTERVAL = 300000;
  var delay = INTERVAL;
  var timer = null;

  function show(unread) {
    count.textContent = String(unread);
    count.dataset.count = String(unread);
    bell.setAttribute("aria-label", "Notifications: " + unread + " unread");
  }

  function schedule() {
    window.clearTimeout(timer);
    timer = document.visibilityState === "hidden" ? null : window.setTimeout(poll, delay);
  }

  function poll() {
    // "manual": a signed-out session's redirect to the sign-in page is a failed poll, not a page.
    fetch(bell.dataset.url, { headers: { Accept: "application/json" }, credentials: "same-origin", redirect: "manual" })
      .then(function (response) {
        if (!response.ok) {
          throw new Error("HTTP " + response.status);
        }
        return response.json();
      })
      .then(function (body) {
        if (typeof body.unread === "number") {
          show(body.unread);
        }
        delay = INTERVAL;
      })
      .catch(function () {
        delay = Math.min(delay * 2, MAX_INTERVAL);
      })
      .then(schedule);
  }

  document.addEventListener("visibilitychange", function () {
    if (document.visibilityState === "hidden") {
      window.clearTimeout(timer);
      timer = null;
    } else {
      poll();
    }
  });
  schedule();
})();
