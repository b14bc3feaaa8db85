// The report page while its run goes on: poll the progress view, update the line in place,
// and reload once the run has ended so the rendered report appears. No inline script.
(function () {
  "use strict";
  var box = document.getElementById("progress");
  if (!box || !box.dataset.url) {
    return;
  }
  var url = box.dataset.url;
  var interval = 2000;

  function counted(n, noun) {
    return n + " " + noun + (n === 1 ? "" : "s");
  }

  function describe(p) {
    var parts = [p.status_display];
    if (p.phase) parts.push(p.phase);
    if (p.level && p.levels) parts.push("level " + p.level + " of " + p.levels);
    if (p.documents_total) parts.push(p.documents_swept + " of " + p.documents_total + " documents swept");
    if (p.documents_reread) parts.push(p.documents_reread + " read again");
    parts.push(counted(p.findings, "finding"));
    parts.push(counted(p.sources, "source"));
    parts.push(p.steps + " steps");
    if (p.elapsed_seconds !== null) parts.push(Math.round(p.elapsed_seconds) + " s");
    return parts.join(" · ");
  }

  // The page's header line (status, findings, sources) follows the run too.
  function header(p) {
    var status = document.querySelector("header.meta .status");
    if (status) {
      status.textContent = p.status_display;
      status.dataset.status = p.status;
    }
    var findings = document.querySelector("header.meta .findings");
    if (findings) findings.textContent = counted(p.findings, "finding");
    var sources = document.querySelector("header.meta .sources");
    if (sources) sources.textContent = counted(p.sources, "source");
  }

  function poll() {
    fetch(url, { headers: { Accept: "application/json" }, credentials: "same-origin" })
      .then(function (response) {
        if (!response.ok) throw new Error("HTTP " + response.status);
        return response.json();
      })
      .then(function (p) {
        box.querySelector(".line").textContent = describe(p);
        header(p);
        box.dataset.status = p.status;
        if (p.terminal) {
          window.location.reload();
        } else {
          window.setTimeout(poll, interval);
        }
      })
      .catch(function () {
        window.setTimeout(poll, interval * 2);
      });
  }

  window.setTimeout(poll, interval);
})();
