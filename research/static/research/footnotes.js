// The report page's footnotes: a click on [n] opens a side panel with the cited passage (its
// quote highlighted), its document and page, and a link to the document view at that passage.
// The panel shows a copy of the Sources entry's own nodes (rendered and escaped by the server),
// never HTML built from strings. Without this script the footnote jumps to the Sources list.
// And printing: the Print button prints the page, with every cited passage unfolded.
(function () {
  "use strict";
  var opened = [];
  window.addEventListener("beforeprint", function () {
    opened = Array.prototype.filter.call(document.querySelectorAll("ol.sources details"), function (d) {
      return !d.open;
    });
    opened.forEach(function (d) { d.open = true; });
  });
  window.addEventListener("afterprint", function () {
    opened.forEach(function (d) { d.open = false; });
    opened = [];
  });
  var printButton = document.querySelector("[data-print]");
  if (printButton) {
    printButton.addEventListener("click", function () { window.print(); });
  }

  var panel = document.getElementById("source-panel");
  if (!panel) {
    return;
  }
  var body = panel.querySelector(".body");
  var number = panel.querySelector(".number");
  var opener = null;

  function open(footnote, link) {
    var entry = document.getElementById("source-" + footnote);
    var detail = entry && entry.querySelector(".source-detail");
    if (!detail) {
      return false;
    }
    body.replaceChildren(detail.cloneNode(true));
    number.textContent = footnote;
    panel.hidden = false;
    panel.dataset.footnote = footnote;
    opener = link;
    panel.querySelector(".close").focus();
    return true;
  }

  function close() {
    panel.hidden = true;
    delete panel.dataset.footnote;
    if (opener) {
      opener.focus();
      opener = null;
    }
  }

  document.addEventListener("click", function (event) {
    var link = event.target.closest('article sup a[href^="#source-"]');
    if (!link) {
      return;
    }
    var footnote = link.getAttribute("href").slice("#source-".length);
    if (open(footnote, link)) {
      event.preventDefault();
    }
  });
  panel.querySelector(".close").addEventListener("click", close);
  document.addEventListener("keydown", function (event) {
    if (event.key === "Escape" && !panel.hidden) {
      close();
    }
  });
})();
