// A conversation's page: poll for messages after the last one shown and append them, so the
// answer to a question and the note announcing a finished research run appear without a reload.
// Every 2 s while a run this chat started goes on, every 10 s otherwise; not while the tab is
// hidden. Message HTML comes from the server, rendered from markdown and sanitized there (the
// report page's renderer); the rest is built with DOM calls and textContent.
(function () {
  "use strict";
  var list = document.getElementById("chat");
  if (!list || !list.dataset.url) {
    return;
  }
  var after = Number(list.dataset.after) || 0;
  var researching = list.dataset.researching === "true";
  var timer = null;

  function append(message) {
    if (message.id <= after) {
      return;
    }
    var item = document.createElement("li");
    item.className = "message " + message.role.toLowerCase();
    item.dataset.id = String(message.id);
    var who = document.createElement("div");
    who.className = "who";
    who.textContent = message.role_display;
    var content = document.createElement("div");
    content.className = "content";
    // Sanitized server-side (research.pages.markdown_html: escaped markup, nh3 allow-list).
    content.innerHTML = message.html;
    item.append(who, content);
    if (message.report_url) {
      var p = document.createElement("p");
      p.className = "report-link";
      var a = document.createElement("a");
      a.href = message.report_url;
      a.textContent = "Open the report";
      p.append(a);
      item.append(p);
    }
    list.append(item);
    after = message.id;
  }

  function schedule() {
    clearTimeout(timer);
    if (document.visibilityState === "visible") {
      timer = setTimeout(poll, researching ? 2000 : 10000);
    }
  }

  function poll() {
    fetch(list.dataset.url + "?after=" + after, { headers: { Accept: "application/json" }, credentials: "same-origin" })
      .then(function (response) {
        if (!response.ok || !(response.headers.get("Content-Type") || "").startsWith("application/json")) {
          throw new Error("HTTP " + response.status);
        }
        return response.json();
      })
      .then(function (data) {
        data.messages.forEach(append);
        researching = data.researching;
      })
      .catch(function () { /* the next poll tries again */ })
      .then(schedule);
  }

  document.addEventListener("visibilitychange", function () {
    if (document.visibilityState === "visible") {
      poll();
    } else {
      clearTimeout(timer);
    }
  });
  schedule();
})();
