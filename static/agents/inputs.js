// Plain inputs for an agent's card and executor, on the admin and the developer pages alike:
// tag chips, repeatable rows, the chosen executor kind's settings, the access lists shown only
// when access is "listed". A file, not an inline script: the pages' CSP allows 'self' only.
(() => {
  "use strict";

  function split(text) {
    return text.split(/[,\n]/).map((part) => part.trim()).filter(Boolean);
  }

  // The real input (posted as "a, b") becomes hidden; chips and an entry box stand in for it.
  function enhanceChips(input) {
    if (input.dataset.chipsReady || input.name.includes("__prefix__")) return;
    input.dataset.chipsReady = "1";
    const chips = split(input.value);
    const box = document.createElement("div");
    box.className = "chips";
    const entry = document.createElement("input");
    entry.type = "text";
    entry.id = `${input.id}-entry`;
    entry.className = "chip-entry";
    entry.autocomplete = "off";
    entry.placeholder = "add…";
    const label = document.querySelector(`label[for="${input.id}"]`);
    if (label) label.htmlFor = entry.id;

    const sync = () => {
      const pending = entry.value.trim();
      input.value = [...chips, ...(pending ? [pending] : [])].join(", ");
    };
    const commit = (text) => {
      for (const word of split(text)) if (!chips.includes(word)) chips.push(word);
    };
    const render = () => {
      box.querySelectorAll(".chip").forEach((chip) => chip.remove());
      chips.forEach((word, index) => {
        const chip = document.createElement("span");
        chip.className = "chip";
        const text = document.createElement("span");
        text.className = "chip-text";
        text.textContent = word;
        chip.append(text);
        const remove = document.createElement("button");
        remove.type = "button";
        remove.className = "chip-remove";
        remove.textContent = "×";
        remove.setAttribute("aria-label", `Remove ${word}`);
        remove.addEventListener("click", () => {
          chips.splice(index, 1);
          render();
          sync();
          entry.dispatchEvent(new Event("input", {bubbles: true}));
        });
        chip.append(remove);
        box.insertBefore(chip, entry);
      });
    };
    entry.addEventListener("input", () => {
      if (entry.value.includes(",")) {
        const parts = entry.value.split(",");
        const last = parts.pop();
        commit(parts.join(","));
        entry.value = last.trimStart();
        render();
      }
      sync();
    });
    entry.addEventListener("keydown", (event) => {
      if (event.key === "Enter") {
        event.preventDefault();  // Enter makes a chip; it does not send the form
        commit(entry.value);
        entry.value = "";
        render();
        sync();
      } else if (event.key === "Backspace" && !entry.value && chips.length) {
        chips.pop();
        render();
        sync();
      }
    });
    entry.addEventListener("blur", () => {
      if (!entry.value.trim()) return;
      commit(entry.value);
      entry.value = "";
      render();
      sync();
    });
    box.addEventListener("click", (event) => { if (event.target === box) entry.focus(); });
    input.type = "hidden";
    input.after(box);
    box.append(entry);
    render();
  }

  function enhance(root) {
    if (!(root instanceof Element)) return;
    const inputs = root.matches("input[data-chips]") ? [root] : root.querySelectorAll("input[data-chips]");
    inputs.forEach(enhanceChips);
  }

  function addRow(box) {
    const body = box.querySelector("tbody");
    const next = Number(box.dataset.next || body.rows.length);
    body.insertAdjacentHTML("beforeend", box.querySelector("template").innerHTML.replace(/__row__/g, String(next)));
    box.dataset.next = String(next + 1);
    body.lastElementChild.querySelector("input, select")?.focus();
  }

  function removeRow(button) {
    const row = button.closest("tr");
    const box = button.closest(".input-rows");
    if (row.parentElement.rows.length > 1) row.remove();
    else row.querySelectorAll("input, select").forEach((field) => {
      if (field.type === "checkbox") field.checked = false; else field.value = "";
    });
    box.dispatchEvent(new Event("input", {bubbles: true}));
  }

  document.addEventListener("click", (event) => {
    const add = event.target.closest(".input-rows .add-row");
    if (add) addRow(add.closest(".input-rows"));
    const remove = event.target.closest(".input-rows .remove-row");
    if (remove) removeRow(remove);
  });

  // Skill ids typed on the page are offered in a python agent's function rows.
  document.addEventListener("focusin", (event) => {
    const input = event.target;
    if (!input.matches || !input.matches("input[data-suggest-skills]") || !input.list) return;
    const ids = [...document.querySelectorAll("input[name$='-skill_id']")]
      .map((field) => field.value.trim()).filter(Boolean);
    input.list.replaceChildren(...["*", ...new Set(ids)].map((id) => new Option(id, id)));
  });

  // Only the selected executor kind's settings are shown and posted (a disabled fieldset's
  // fields are not sent); the server judges that kind's form alone.
  function showSettings(select) {
    let shown = false;
    for (const box of document.querySelectorAll("fieldset.executor-settings")) {
      const selected = box.dataset.kind === select.value;
      box.hidden = !selected;
      box.disabled = !selected;
      shown = shown || selected;
    }
    document.querySelectorAll(".no-settings").forEach((note) => { note.hidden = shown || !select.value; });
  }

  // The lists of callers mean something only with access "listed".
  function showLists(form) {
    const select = form.querySelector("select[name=access]");
    const radio = form.querySelector("input[name=access]:checked");
    const listed = (select ? select.value : radio && radio.value) === "listed";
    const parts = ".field-allowed_users, .field-allowed_groups, .field-allowed_applications, .listed-only";
    form.querySelectorAll(parts).forEach((part) => { part.style.display = listed ? "" : "none"; });
  }

  function start() {
    enhance(document.body);
    new MutationObserver((changes) => changes.forEach((change) => change.addedNodes.forEach(enhance)))
      .observe(document.body, {childList: true, subtree: true});
    const kind = document.querySelector("select[name=executor_kind]");
    if (kind) {
      kind.addEventListener("change", () => showSettings(kind));
      showSettings(kind);
    }
    document.querySelectorAll("form").forEach((form) => {
      if (!form.querySelector("[name=access]")) return;
      form.addEventListener("change", (event) => { if (event.target.name === "access") showLists(form); });
      showLists(form);
    });
    // A folded section holding an error opens, so the error is seen.
    document.querySelectorAll("details").forEach((part) => {
      if (part.querySelector(".errorlist, .errors")) part.open = true;
    });
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
