// The console's live pages: the dashboard's numbers, the task list's rows and a task's
// timeline, updated over a WebSocket without reloading. Each message applied is acknowledged
// by its number; a page that cannot keep up is told by the server to reload, and says so.
"use strict";

(function () {
  const RETRY_LIMIT = 6;

  function socketUrl(path) {
    const scheme = window.location.protocol === "https:" ? "wss:" : "ws:";
    return scheme + "//" + window.location.host + path;
  }

  function statusLine(anchor, before) {
    let line = document.querySelector(".console-live-status");
    if (!line) {
      line = document.createElement("p");
      line.className = "console-live-status";
      line.setAttribute("aria-live", "polite");
      line.innerHTML = '<span class="console-dot"></span> <span class="console-live-text"></span>';
      if (before) {
        anchor.parentNode.insertBefore(line, anchor);
      } else {
        anchor.prepend(line);
      }
    }
    return {
      set(state, text) {
        line.dataset.state = state;
        line.querySelector(".console-live-text").textContent = text;
      },
      reload(text) {
        line.dataset.state = "reload";
        line.querySelector(".console-live-text").textContent = text + " ";
        const button = document.createElement("button");
        button.type = "button";
        button.className = "button console-reload";
        button.textContent = "Reload";
        button.addEventListener("click", () => window.location.reload());
        line.append(button);
      },
    };
  }

  // Opens the socket at `path`; `apply(message)` handles each update.
  function follow(path, status, apply) {
    let tries = 0;
    let stopped = false;
    function open() {
      const socket = new WebSocket(socketUrl(typeof path === "function" ? path() : path));
      socket.addEventListener("open", () => {
        tries = 0;
        status.set("live", "Live: updates appear as they happen.");
      });
      socket.addEventListener("message", (event) => {
        const message = JSON.parse(event.data);
        if (message.type === "reload") {
          // The server sends nothing more; the socket is ours to close.
          stopped = true;
          status.reload(message.reason);
          socket.close();
          return;
        }
        try {
          apply(message);
        } finally {
          socket.send(JSON.stringify({ ack: message.n }));
        }
      });
      socket.addEventListener("close", () => {
        if (stopped) {
          return;
        }
        tries += 1;
        if (tries > RETRY_LIMIT) {
          status.reload("Live updates stopped.");
          return;
        }
        status.set("retrying", "Live updates interrupted; reconnecting…");
        window.setTimeout(open, Math.min(30000, 500 * 2 ** tries));
      });
    }
    open();
  }

  // -- the dashboard ------------------------------------------------------------------------

  function dashboard(root) {
    const status = statusLine(root, false);
    follow(root.dataset.socket, status, (message) => {
      if (message.type === "dashboard") {
        document.getElementById("console-panels").innerHTML = message.html;
      }
    });
  }

  // -- a task's timeline (the task admin's events inline) -----------------------------------

  function timelineBody() {
    const group = document.getElementById("events-group");
    return group ? group.querySelector("tbody") : null;
  }

  function shownSequences(body) {
    const shown = new Set();
    body.querySelectorAll("td.field-sequence").forEach((cell) => {
      const number = parseInt(cell.textContent.trim(), 10);
      if (!Number.isNaN(number)) {
        shown.add(number);
      }
    });
    return shown;
  }

  function setCell(row, name, text) {
    const cell = row.querySelector(".field-" + name);
    if (!cell) {
      return;
    }
    const holder = cell.querySelector("a") || cell.querySelector("p") || cell;
    holder.textContent = text;
  }

  function eventRow(body, event) {
    const model = body.querySelector("tr.has_original") || body.querySelector("tr.form-row");
    const row = model.cloneNode(true);
    row.removeAttribute("id");
    row.querySelectorAll("input, .original p").forEach((node) => node.remove());
    row.classList.add("console-new");
    row.dataset.sequence = event.sequence;
    ["sequence", "kind", "created_at", "summary"].forEach((name) => setCell(row, name, event[name]));
    return row;
  }

  function addEvents(body, events, shown) {
    events.forEach((event) => {
      if (shown.has(event.sequence)) {
        return;
      }
      shown.add(event.sequence);
      const row = eventRow(body, event);
      const later = Array.from(body.querySelectorAll("td.field-sequence")).find(
        (cell) => parseInt(cell.textContent.trim(), 10) > event.sequence
      );
      body.insertBefore(row, later ? later.closest("tr") : null);
      if (event.state) {
        const state = document.querySelector(".field-state .readonly");
        if (state) {
          state.textContent = event.state;
        }
      }
    });
  }

  function timeline(hook) {
    const body = timelineBody();
    if (!body) {
      return;
    }
    const shown = shownSequences(body);
    const status = statusLine(document.getElementById("events-group"), true);
    const path = () => hook.dataset.socket + "?after=" + Math.max(0, ...shown);
    follow(path, status, (message) => {
      if (message.type === "events") {
        addEvents(body, message.events, shown);
      }
    });
  }

  // -- the task list ------------------------------------------------------------------------

  // New tasks are added in place only where they surely belong: the first page, unfiltered,
  // newest first. Elsewhere the page says how many changed and offers a reload.
  function listTakesNewRows() {
    const params = new URLSearchParams(window.location.search);
    return Array.from(params.keys()).length === 0;
  }

  function rowOf(table, id) {
    const box = table.querySelector('input.action-select[value="' + id + '"]');
    if (box) {
      return box.closest("tr");
    }
    const link = table.querySelector('a[href*="/' + id + '/change/"]');
    return link ? link.closest("tr") : null;
  }

  function fillRow(row, data) {
    Object.entries(data.cells).forEach(([name, text]) => setCell(row, name, text));
    const link = row.querySelector("th a, td a");
    if (link) {
      link.href = data.url;
    }
    const box = row.querySelector("input.action-select");
    if (box) {
      box.value = data.id;
      box.checked = false;
    }
    row.dataset.state = data.state;
  }

  function taskList(hook) {
    const table = document.getElementById("result_list");
    const anchor = document.getElementById("changelist") || document.getElementById("content-main");
    if (!anchor) {
      return;
    }
    const status = statusLine(anchor, true);
    const notice = document.createElement("p");
    notice.id = "console-list-notice";
    notice.hidden = true;
    anchor.parentNode.insertBefore(notice, anchor);
    let elsewhere = 0;
    follow(hook.dataset.socket, status, (message) => {
      if (message.type !== "tasks") {
        return;
      }
      const body = table ? table.querySelector("tbody") : null;
      message.rows.forEach((data) => {
        const row = body ? rowOf(table, data.id) : null;
        if (row) {
          fillRow(row, data);
          row.classList.add("console-changed");
        } else if (body && body.rows.length && listTakesNewRows()) {
          const fresh = body.rows[0].cloneNode(true);
          fillRow(fresh, data);
          fresh.classList.add("console-new");
          body.prepend(fresh);
        } else {
          elsewhere += 1;
        }
      });
      elsewhere += message.more || 0;
      if (elsewhere) {
        notice.hidden = false;
        notice.innerHTML = "";
        notice.append(elsewhere + " more task change(s) since this page was loaded. ");
        const link = document.createElement("a");
        link.href = window.location.href;
        link.textContent = "Reload the list";
        notice.append(link);
      }
    });
  }

  document.addEventListener("DOMContentLoaded", () => {
    const board = document.getElementById("console-dashboard");
    if (board) {
      dashboard(board);
    }
    const task = document.getElementById("console-task-live");
    if (task) {
      timeline(task);
    }
    const list = document.getElementById("console-task-list");
    if (list) {
      taskList(list);
    }
  });
})();
