// The agent form's live preview of the card as it is edited.
// A file, not an inline script: the pages' Content-Security-Policy allows scripts from 'self' only.
(() => {
  "use strict";
  const form = document.getElementById("agent-form");
  const panel = document.getElementById("live-preview");
  const cardBox = document.getElementById("preview-card");
  const errorBox = document.getElementById("preview-errors");
  const status = document.getElementById("preview-status");
  const total = document.getElementById("id_skills-TOTAL_FORMS");
  let timer = null;
  let sent = 0;

  function show(result, number) {
    if (number !== sent) return;  // an older answer came in late
    errorBox.replaceChildren(...(result.errors || []).map((text) => {
      const item = document.createElement("li");
      item.textContent = text;
      return item;
    }));
    errorBox.hidden = result.ok;
    if (result.ok) cardBox.textContent = JSON.stringify(result.card, null, 2);
    panel.classList.toggle("stale", !result.ok);
    status.textContent = result.ok ? "valid" : "not valid yet";
  }

  async function refresh() {
    const number = ++sent;
    status.textContent = "checking…";
    try {
      const response = await fetch(panel.dataset.url, {
        method: "POST", body: new FormData(form), credentials: "same-origin",
        headers: {"Accept": "application/json"},
      });
      if (!response.ok) throw new Error(`HTTP ${response.status}`);
      show(await response.json(), number);
    } catch (error) {
      if (number === sent) status.textContent = `preview failed (${error.message})`;
    }
  }

  function later() {
    clearTimeout(timer);
    timer = setTimeout(refresh, 350);
  }

  document.getElementById("add-skill").addEventListener("click", () => {
    const html = document.getElementById("skill-template").innerHTML;
    document.getElementById("skill-forms").insertAdjacentHTML(
      "beforeend", html.replace(/__prefix__/g, total.value));
    total.value = Number(total.value) + 1;
    later();
  });
  form.addEventListener("input", later);
  form.addEventListener("change", later);
  refresh();
})();
