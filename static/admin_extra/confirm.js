// Buttons with `data-confirm` ask before their form is sent. A file, not an `onclick`
// attribute: the pages' Content-Security-Policy runs no inline script.
document.addEventListener("click", (event) => {
  const button = event.target.closest("[data-confirm]");
  if (button && !window.confirm(button.dataset.confirm)) event.preventDefault();
});
