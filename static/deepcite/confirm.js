// A form with data-confirm="..." (deleting a document, revoking a token, deleting the webhook)
// asks before it is sent: one click on the wrong row's button no longer deletes at once.
document.addEventListener("submit", (event) => {
  const message = event.target instanceof HTMLFormElement ? event.target.dataset.confirm : undefined;
  if (message && !window.confirm(message)) {
    event.preventDefault();
  }
});
