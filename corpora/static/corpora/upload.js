// The corpus page's upload form: files dropped on the zone are put into the form's file input
// and uploaded at once (the page then shows a result per file); chosen files are listed with
// their total size, and an upload over the limit is said before it is sent (the server checks
// again). Without this script the file input and the Upload button work as they are.
(function () {
  "use strict";
  var form = document.querySelector("form.upload");
  if (!form) {
    return;
  }
  var zone = form.querySelector("[data-dropzone]");
  var input = form.querySelector("input[type=file]");
  var chosen = form.querySelector(".chosen");
  var limit = Number(form.dataset.limitBytes);

  function megabytes(bytes) {
    return (bytes / (1024 * 1024)).toFixed(1) + " MB";
  }

  function describe() {
    var files = Array.prototype.slice.call(input.files);
    var total = files.reduce(function (sum, file) { return sum + file.size; }, 0);
    var names = files.map(function (file) { return file.name; }).join(", ");
    var over = limit && total > limit;
    chosen.textContent = files.length
      ? files.length + " file" + (files.length === 1 ? "" : "s") + ", " + megabytes(total) + ": " + names +
        (over ? " — over the " + megabytes(limit) + " limit; upload fewer at a time" : "")
      : "";
    chosen.classList.toggle("error", Boolean(over));
    return files.length > 0 && !over;
  }

  input.addEventListener("change", describe);
  form.addEventListener("submit", function (event) {
    if (!describe()) {
      event.preventDefault();
    }
  });
  ["dragenter", "dragover"].forEach(function (name) {
    zone.addEventListener(name, function (event) {
      event.preventDefault();
      zone.classList.add("over");
    });
  });
  ["dragleave", "dragend"].forEach(function (name) {
    zone.addEventListener(name, function () {
      zone.classList.remove("over");
    });
  });
  zone.addEventListener("drop", function (event) {
    event.preventDefault();
    zone.classList.remove("over");
    if (!event.dataTransfer || !event.dataTransfer.files.length) {
      return;
    }
    input.files = event.dataTransfer.files;
    if (describe()) {
      form.requestSubmit();
    }
  });
})();
