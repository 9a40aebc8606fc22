// The task page stays true while the task runs: every second it fetches the page's live part
// again and swaps it in, until the task stops moving (finished, or waiting for the caller).
(() => {
  "use strict";
  const body = document.getElementById("task-body");
  if (!body || body.dataset.moving !== "true") return;
  const PERIOD_MS = 1000;
  const MAX_FAILURES = 30; // the hub gone for half a minute: stop asking, say so

  let failures = 0;
  async function refresh() {
    try {
      const response = await fetch(body.dataset.bodyUrl, {
        credentials: "same-origin", headers: {"Accept": "application/json"}, cache: "no-store",
      });
      if (!response.ok) throw new Error(`HTTP ${response.status}`);
      const update = await response.json();
      body.innerHTML = update.html;
      body.dataset.moving = update.moving ? "true" : "false";
      failures = 0;
      if (update.moving) setTimeout(refresh, PERIOD_MS);
    } catch (error) {
      failures += 1;
      if (failures < MAX_FAILURES) setTimeout(refresh, PERIOD_MS);
      else body.insertAdjacentHTML("afterbegin",
        '<p class="errorlist">This page stopped updating; reload it to see the task now.</p>');
    }
  }
  setTimeout(refresh, PERIOD_MS);
})();
