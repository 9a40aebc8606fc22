// Copy buttons: `<button data-copy="ID">` copies the text of the element with that id.
// Where the clipboard API is refused (an http:// page not on localhost), the text is selected
// instead, for Ctrl+C.
(() => {
  "use strict";
  function select(element) {
    const range = document.createRange();
    range.selectNodeContents(element);
    const selection = window.getSelection();
    selection.removeAllRanges();
    selection.addRange(range);
  }

  async function copy(button) {
    const source = document.getElementById(button.dataset.copy);
    if (!source) return;
    const label = button.dataset.label || button.textContent;
    button.dataset.label = label;
    try {
      if (!navigator.clipboard) throw new Error("no clipboard");
      await navigator.clipboard.writeText(source.textContent);
      button.textContent = "Copied";
    } catch (error) {
      select(source);
      button.textContent = "Selected: press Ctrl+C";
    }
    setTimeout(() => { button.textContent = label; }, 2000);
  }

  document.addEventListener("click", (event) => {
    const button = event.target.closest("button[data-copy]");
    if (button) copy(button);
  });
})();
