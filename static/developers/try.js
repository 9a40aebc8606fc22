// The agent page's "Try it" form: sends one message without leaving the page.
// A file, not an inline script: the pages' Content-Security-Policy allows scripts from 'self' only.
(() => {
  "use strict";
  const form = document.getElementById("try-form");
  const button = form.querySelector("button");
  const reply = document.getElementById("try-reply");
  const problem = document.getElementById("try-error");

  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    button.disabled = true;
    problem.hidden = true;
    try {
      const response = await fetch(form.action, {
        method: "POST", body: new FormData(form), credentials: "same-origin",
        headers: {"Accept": "application/json"},
      });
      if (!response.ok) throw new Error(`HTTP ${response.status}`);
      const result = await response.json();
      if (!result.ok) throw new Error(result.error.message);
      document.getElementById("try-state").textContent = result.state;
      document.getElementById("try-task").textContent = result.taskId ? `task ${result.taskId}` : "";
      document.getElementById("try-text-out").textContent =
        result.text || result.statusText || "(no text in the reply)";
      document.getElementById("try-raw").textContent = JSON.stringify(result.result, null, 2);
      reply.hidden = false;
    } catch (error) {
      problem.textContent = `The agent did not answer: ${error.message}`;
      problem.hidden = false;
    } finally {
      button.disabled = false;
    }
  });
})();
