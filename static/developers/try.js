// The agent page's "Try it" form: sends one message without leaving the page.
// A file, not an inline script: the pages' Content-Security-Policy allows scripts from 'self' only.
(() => {
  "use strict";
  const form = document.getElementById("try-form");
  const button = form.querySelector("button");
  const reply = document.getElementById("try-reply");
  const problem = document.getElementById("try-error");

  // The reply's task, linked to its page (the form names where the agent's tasks are).
  function showTask(taskId) {
    const where = document.getElementById("try-task");
    where.replaceChildren();
    if (!taskId) return;
    const link = document.createElement("a");
    link.href = `${form.dataset.tasksUrl}${encodeURIComponent(taskId)}/`;
    link.textContent = `task ${taskId}`;
    where.append(link);
  }

  // The page's "Recent tasks" as the hub now has them: the task just sent is the first row.
  async function refreshRecentTasks() {
    const recent = document.getElementById("recent-tasks");
    try {
      const response = await fetch(window.location.href, {credentials: "same-origin"});
      if (!recent || !response.ok) return;
      const page = new DOMParser().parseFromString(await response.text(), "text/html");
      const fresh = page.getElementById("recent-tasks");
      if (fresh) recent.replaceWith(fresh);
    } catch (error) {
      // The reply is shown; the list catches up on the next visit.
    }
  }

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
      showTask(result.taskId);
      document.getElementById("try-text-out").textContent =
        result.text || result.statusText || "(no text in the reply)";
      document.getElementById("try-raw").textContent = JSON.stringify(result.result, null, 2);
      reply.hidden = false;
      await refreshRecentTasks();
    } catch (error) {
      problem.textContent = `The agent did not answer: ${error.message}`;
      problem.hidden = false;
    } finally {
      button.disabled = false;
    }
  });
})();
