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
        if (window.hubWhen) {
          window.hubWhen.refresh();
        }
      }
    });
  }

  // -- a task's page: its timeline (the events inline) and every other part ----------------

  function groupBody(name) {
    const group = document.getElementById(name + "-group");
    return group ? group.querySelector("tbody") : null;
  }

  function numbersIn(body, name) {
    const shown = new Set();
    body.querySelectorAll("td.field-" + name).forEach((cell) => {
      const number = parseInt(cell.textContent.trim(), 10);
      if (!Number.isNaN(number)) {
        shown.add(number);
      }
    });
    return shown;
  }

  function setCell(row, name, html) {
    const cell = row.querySelector(".field-" + name);
    if (!cell) {
      return;
    }
    const holder = cell.querySelector("a") || cell.querySelector("p") || cell;
    holder.innerHTML = html;
  }

  // A row of an inline table, its cells in the order of the table's heading; `cells` maps a
  // field's name to its HTML (escaped by the server).
  function inlineRow(body, cells) {
    const row = document.createElement("tr");
    row.className = "form-row has_original console-new";
    body.closest("table").querySelectorAll("thead th").forEach((heading) => {
      const cell = document.createElement("td");
      const column = Array.from(heading.classList).find((name) => name.startsWith("column-"));
      if (heading.classList.contains("original")) {
        cell.className = "original";
      } else if (column) {
        const name = column.slice("column-".length);
        cell.className = "field-" + name;
        const text = document.createElement("p");
        text.innerHTML = cells[name] === undefined ? "—" : cells[name];
        cell.append(text);
      } else {
        cell.className = "delete";
      }
      row.append(cell);
    });
    return row;
  }

  // Puts the row numbered `number` (in the cell `field`) in its place, replacing one of the
  // same number.
  function placeRow(body, field, number, row) {
    const cells = Array.from(body.querySelectorAll("td.field-" + field));
    const same = cells.find((cell) => parseInt(cell.textContent.trim(), 10) === number);
    if (same) {
      same.closest("tr").replaceWith(row);
      return;
    }
    const later = cells.find((cell) => parseInt(cell.textContent.trim(), 10) > number);
    body.insertBefore(row, later ? later.closest("tr") : null);
  }

  function escaped(text) {
    const holder = document.createElement("span");
    holder.textContent = text;
    return holder.innerHTML;
  }

  function eventCells(event) {
    const at = escaped(event.created_at);
    const progress = event.progress
      ? ' data-done="' + event.progress[0] + '" data-total="' + event.progress[1] + '"'
      : "";
    return {
      sequence: String(event.sequence),
      kind: escaped(event.kind),
      at: '<time datetime="' + event.at + '" title="' + at + ' UTC">' + at + "</time>",
      summary: '<span class="console-summary"' + progress + ">" + escaped(event.summary) + "</span>",
    };
  }

  function addEvents(body, events, shown) {
    events.forEach((event) => {
      if (shown.has(event.sequence)) {
        return;
      }
      shown.add(event.sequence);
      placeRow(body, "sequence", event.sequence, inlineRow(body, eventCells(event)));
      if (event.state) {
        setField("state", escaped(event.state));
      }
    });
  }

  function shortDuration(seconds) {
    if (seconds < 0.1) {
      return "<0.1 s";
    }
    if (seconds < 10) {
      return (Math.round(seconds * 10) / 10).toFixed(1).replace(/\.0$/, "") + " s";
    }
    return window.hubWhen ? window.hubWhen.duration(seconds) : Math.round(seconds) + " s";
  }

  // The time since the event before, beside each event's time.
  function showGaps(rows) {
    let previous = null;
    rows.forEach((row) => {
      const time = row.querySelector(".field-at time");
      if (!time) {
        return;
      }
      const at = Date.parse(time.getAttribute("datetime"));
      let gap = row.querySelector(".console-gap");
      if (previous !== null) {
        if (!gap) {
          gap = document.createElement("span");
          gap.className = "console-gap";
          time.after(gap);
        }
        gap.textContent = "+" + shortDuration(Math.max(0, (at - previous) / 1000));
      }
      previous = at;
    });
  }

  // A run of progress reports reads as one row: the last, with a bar, the count and the time
  // the run took; the others show on demand.
  function foldRun(run) {
    if (run.length < 2) {
      return;
    }
    const last = run[run.length - 1];
    run.slice(0, -1).forEach((row) => row.classList.add("console-folded"));
    last.classList.add("console-run-end");
    const summary = last.querySelector(".console-summary");
    const times = run.map((row) => Date.parse(row.querySelector(".field-at time").getAttribute("datetime")));
    const line = document.createElement("div");
    line.className = "console-run";
    const bar = document.createElement("progress");
    bar.className = "hub-progress";
    bar.max = parseFloat(summary.dataset.total);
    bar.value = parseFloat(summary.dataset.done);
    const toggle = document.createElement("button");
    toggle.type = "button";
    toggle.className = "console-unfold";
    toggle.textContent = run.length + " progress reports over " +
      shortDuration((times[times.length - 1] - times[0]) / 1000) + " (show all)";
    toggle.addEventListener("click", () => last.closest("tbody").classList.toggle("console-unfolded"));
    line.append(bar, " " + summary.dataset.done + " of " + summary.dataset.total + " · ", toggle);
    summary.after(line);
  }

  function foldProgress(rows) {
    rows.forEach((row) => {
      row.classList.remove("console-folded", "console-run-end");
      row.querySelectorAll(".console-run").forEach((node) => node.remove());
    });
    let run = [];
    rows.forEach((row) => {
      if (row.querySelector(".console-summary[data-total]") && row.querySelector(".field-at time")) {
        run.push(row);
      } else {
        foldRun(run);
        run = [];
      }
    });
    foldRun(run);
  }

  function decorateTimeline(body) {
    const rows = Array.from(body.querySelectorAll("tr.has_original"));
    showGaps(rows);
    foldProgress(rows);
  }

  // The task's fields in the fieldsets above the inlines (never an inline's cells).
  function setField(name, html) {
    document.querySelectorAll("fieldset .field-" + name + " .readonly").forEach((node) => {
      node.innerHTML = html;
    });
  }

  function replaceText(root, before, after) {
    if (!root || !before || before === after) {
      return;
    }
    const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
    while (walker.nextNode()) {
      const node = walker.currentNode;
      if (node.nodeValue.includes(before)) {
        node.nodeValue = node.nodeValue.split(before).join(after);
      }
    }
  }

  function showTitle(hook, title) {
    const before = hook.dataset.title;
    if (before === title) {
      return;
    }
    replaceText(document.querySelector(".breadcrumbs"), before, title);
    document.querySelectorAll("#content > h2, #content h2.subtitle").forEach((node) => {
      replaceText(node, before, title);
    });
    document.title = document.title.split(before).join(title);
    hook.dataset.title = title;
  }

  function rowText(row) {
    return Array.from(row.querySelectorAll("td[class^='field-']"))
      .map((cell) => cell.textContent.replace(/\s+/g, " ").trim())
      .join("|");
  }

  function placeInlineRows(name, rows) {
    const body = groupBody(name);
    if (!body) {
      return;
    }
    rows.forEach((data) => {
      const row = inlineRow(body, data.cells);
      const same = Array.from(body.querySelectorAll("td.field-position")).find(
        (cell) => parseInt(cell.textContent.trim(), 10) === data.position
      );
      if (same) {
        if (rowText(same.closest("tr")) === rowText(row)) {
          return; // unchanged
        }
        row.classList.replace("console-new", "console-changed");
      }
      placeRow(body, "position", data.position, row);
    });
  }

  function applyTask(hook, message, status) {
    showTitle(hook, message.title);
    Object.entries(message.fields).forEach(([name, html]) => setField(name, html));
    const summary = document.getElementById("console-task-summary");
    if (summary) {
      summary.innerHTML = message.summary;
    }
    placeInlineRows("messages", message.messages);
    placeInlineRows("artifacts", message.artifacts);
    if (message.finished) {
      const cancel = document.getElementById("cancel-task");
      if (cancel) {
        cancel.closest("li").remove();
      }
      hook.dataset.finished = "true";
      status.set("live", "Live: the task has finished; nothing more will change.");
    }
    if (window.hubWhen) {
      window.hubWhen.refresh();
    }
  }

  function taskPage(hook) {
    const body = groupBody("events");
    if (!body) {
      return;
    }
    const shown = numbersIn(body, "sequence");
    decorateTimeline(body);
    const status = statusLine(document.getElementById("events-group"), true);
    const path = () => {
      const messages = groupBody("messages");
      const positions = messages ? Array.from(numbersIn(messages, "position")) : [];
      return hook.dataset.socket + "?after=" + Math.max(0, ...shown) +
        "&messages=" + Math.max(0, ...positions);
    };
    follow(path, status, (message) => {
      if (message.type === "events") {
        addEvents(body, message.events, shown);
        decorateTimeline(body);
      } else if (message.type === "task") {
        applyTask(hook, message, status);
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
    Object.entries(data.cells).forEach(([name, html]) => setCell(row, name, html));
    const link = row.querySelector("th a, td a");
    if (link) {
      link.href = data.url;
    }
    const box = row.querySelector("input.action-select");
    if (box) {
      box.value = data.id;
      box.checked = false;
    }
    row.classList.remove("selected");
    row.dataset.state = data.state;
  }

  // The counters Django's list drew at load ("3 tasks", "0 of 3 selected"), kept true as rows
  // arrive: its own script counts only the rows it found at load.
  function recount(table) {
    const boxes = table.querySelectorAll("tbody input.action-select");
    const chosen = Array.from(boxes).filter((box) => box.checked).length;
    const counter = document.querySelector(".action-counter");
    if (counter) {
      counter.dataset.actionsIcnt = String(boxes.length);
      counter.textContent = chosen + " of " + boxes.length + " selected";
    }
    const toggle = document.getElementById("action-toggle");
    if (toggle) {
      toggle.checked = boxes.length > 0 && chosen === boxes.length;
    }
  }

  function countNewRows(added) {
    document.querySelectorAll(".paginator, #changelist-search .quiet").forEach((line) => {
      replaceCount(line, added);
    });
  }

  function replaceCount(line, added) {
    const walker = document.createTreeWalker(line, NodeFilter.SHOW_TEXT);
    while (walker.nextNode()) {
      const node = walker.currentNode;
      const found = node.nodeValue.match(/(\d[\d,]*)(\+?)\s+(task|result)s?\b/);
      if (found && !found[2]) {
        const count = parseInt(found[1].replace(/,/g, ""), 10) + added;
        const words = count.toLocaleString("en-US") + " " + found[3] + (count === 1 ? "" : "s");
        node.nodeValue = node.nodeValue.replace(found[0], words);
        return;
      }
    }
  }

  function keepCountersTrue(table) {
    if (!table) {
      return;
    }
    // After Django's own handlers (added at load, before these): they saw only the old rows.
    table.querySelectorAll("tbody").forEach((body) => {
      body.addEventListener("change", () => recount(table));
    });
    const toggle = document.getElementById("action-toggle");
    if (toggle) {
      toggle.addEventListener("click", () => {
        table.querySelectorAll("tbody input.action-select").forEach((box) => {
          box.checked = toggle.checked;
          box.closest("tr").classList.toggle("selected", toggle.checked);
        });
        recount(table);
      });
    }
  }

  function taskList(hook) {
    const table = document.getElementById("result_list");
    const anchor = document.getElementById("changelist") || document.getElementById("content-main");
    if (!anchor) {
      return;
    }
    keepCountersTrue(table);
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
      let added = 0;
      message.rows.forEach((data) => {
        const row = body ? rowOf(table, data.id) : null;
        if (row) {
          fillRow(row, data);
          row.classList.remove("console-changed");
          void row.offsetWidth; // restart the flash
          row.classList.add("console-changed");
        } else if (body && body.rows.length && listTakesNewRows()) {
          const fresh = body.rows[0].cloneNode(true);
          fresh.classList.remove("console-new", "console-changed");
          fillRow(fresh, data);
          fresh.classList.add("console-new");
          fresh.title = "New since this page was loaded";
          body.prepend(fresh);
          added += 1;
        } else {
          elsewhere += 1;
        }
      });
      if (added) {
        countNewRows(added);
        recount(table);
      }
      if (window.hubWhen) {
        window.hubWhen.refresh();
      }
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
      taskPage(task);
    }
    const list = document.getElementById("console-task-list");
    if (list) {
      taskList(list);
    }
  });
})();
