/* The chat console (developers/chat.html): posts each message, reads the reply's event stream
   and shows every event as it arrives. What an agent sends is put on the page as text
   (textContent), never as HTML; links are followed only to http(s), the hub's own file view
   or, for images, data: URLs. */
(() => {
  "use strict";
  const root = document.getElementById("chat");
  if (!root) return;

  const form = document.getElementById("chat-form");
  const textBox = document.getElementById("chat-text");
  const sendButton = document.getElementById("chat-send");
  const cancelButton = document.getElementById("chat-cancel");
  const log = document.getElementById("chat-log");
  const problem = document.getElementById("chat-error");
  const turnHint = document.getElementById("chat-turn-hint");
  const taskField = document.getElementById("chat-task-id");
  const contextField = document.getElementById("chat-context-id");
  const taskShown = document.getElementById("chat-task");
  const stateShown = document.getElementById("chat-state");
  const contextShown = document.getElementById("chat-context");

  const WAITING = new Set(["TASK_STATE_INPUT_REQUIRED", "TASK_STATE_AUTH_REQUIRED"]);
  const OPEN = new Set(["TASK_STATE_SUBMITTED", "TASK_STATE_WORKING", ...WAITING]);
  const IMAGE = /^image\/[a-z0-9][a-z0-9.+-]*$/i;
  const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

  // The conversation: its context, its current task and state; the agent's turn on screen,
  // the artifacts shown (by task and artifact id) and the status messages already shown.
  let conversation = fresh();
  let turn = null;
  let reading = null;

  function fresh() {
    return {taskId: "", contextId: "", state: "", artifacts: new Map(), shown: new Set()};
  }

  function make(tag, className, text) {
    const node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined) node.textContent = text;
    return node;
  }

  function stateName(state) {
    return (state || "").replace("TASK_STATE_", "").toLowerCase().replace("_", "-");
  }

  function scrollDown() {
    log.scrollTop = log.scrollHeight;
  }

  // -- parts ------------------------------------------------------------------------------

  function renderPart(part) {
    if (typeof part.text === "string") return make("span", "part-text", part.text);
    if ("data" in part) return dataTree(part.data, "data", 0);
    if (part.href || part.url || part.raw) return filePart(part);
    return make("span", "hint", "(a part this page cannot show)");
  }

  function dataTree(value, label, depth) {
    if (value === null || typeof value !== "object") {
      const leaf = make("span", "data-leaf");
      leaf.append(make("span", "data-key", `${label}: `), make("code", "", JSON.stringify(value)));
      return leaf;
    }
    const entries = Array.isArray(value) ? value.map((item, n) => [String(n), item])
      : Object.entries(value);
    const tree = make("details", "data-tree");
    tree.open = depth === 0;
    const size = Array.isArray(value) ? `[${entries.length}]` : `{${entries.length}}`;
    tree.append(make("summary", "", `${label} ${size}`));
    const list = make("ul");
    for (const [key, item] of entries) {
      const row = make("li");
      row.append(dataTree(item, key, depth + 1));
      list.append(row);
    }
    tree.append(list);
    return tree;
  }

  function fileSource(part, type) {
    if (part.href && part.href.startsWith("/")) return part.href; // the hub's file view
    if (part.url && /^https?:\/\//i.test(part.url)) return part.url;
    if (part.url && /^data:image\//i.test(part.url) && IMAGE.test(type)) return part.url;
    if (part.raw && BASE64.test(part.raw)) { // a reply stored nowhere carries its bytes
      if (IMAGE.test(type)) return `data:${type};base64,${part.raw}`;
      const bytes = Uint8Array.from(atob(part.raw), (c) => c.charCodeAt(0));
      return URL.createObjectURL(new Blob([bytes], {type: "application/octet-stream"}));
    }
    return "";
  }

  function filePart(part) {
    const type = (part.mediaType || "").toLowerCase();
    const name = part.filename || "file";
    const source = fileSource(part, type);
    const box = make("figure", "part-file");
    if (!source) {
      box.append(make("span", "hint", `${name}: a file this page cannot offer`));
      return box;
    }
    if (IMAGE.test(type)) {
      const image = make("img");
      image.alt = name;
      image.src = source;
      box.append(image);
    }
    const link = make("a", "download", `Download ${name}`);
    link.href = source;
    link.download = name;
    link.rel = "noopener noreferrer";
    const about = [type || "unknown type", part.size ? `${part.size} bytes` : ""];
    const caption = make("figcaption");
    caption.append(link, make("span", "hint", ` (${about.filter(Boolean).join(", ")})`));
    box.append(caption);
    return box;
  }

  function fillParts(holder, parts, append) {
    if (!append) holder.replaceChildren();
    for (const part of parts || []) holder.append(renderPart(part));
  }

  // -- turns ------------------------------------------------------------------------------

  function userTurn(text) {
    const item = make("li", "turn user");
    item.append(make("span", "who", "You"), make("span", "part-text", text));
    log.append(item);
  }

  function agentTurn() {
    const item = make("li", "turn agent");
    const head = make("div", "turn-head");
    const state = make("span", "pill", "sending");
    head.append(make("span", "who", "Agent"), state);
    const statuses = make("ol", "statuses");
    const artifacts = make("div", "artifacts");
    item.append(head, statuses, artifacts);
    log.append(item);
    return {item, state, statuses, artifacts};
  }

  function showStatusMessage(message, state) {
    if (!message || conversation.shown.has(message.messageId)) return;
    conversation.shown.add(message.messageId);
    const line = make("li", WAITING.has(state) ? "status question" : "status");
    fillParts(line, message.parts, true);
    turn.statuses.append(line);
  }

  function showArtifact(taskId, artifact, append) {
    const key = `${taskId}/${artifact.artifactId}`;
    let parts = conversation.artifacts.get(key);
    if (!parts) {
      const section = make("section", "artifact");
      section.dataset.artifactId = artifact.artifactId || "";
      section.append(make("h3", "", artifact.name || "Result"));
      parts = make("div", "parts");
      section.append(parts);
      turn.artifacts.append(section);
      conversation.artifacts.set(key, parts);
      append = false;
    }
    fillParts(parts, artifact.parts, append);
  }

  // -- the task ---------------------------------------------------------------------------

  function linkTask(taskId) {
    const links = [];
    const listUrl = root.dataset.taskListUrl;
    const adminUrl = root.dataset.adminTaskUrl;
    const id = listUrl ? make("a", "", taskId) : make("code", "", taskId);
    if (listUrl) id.href = `${listUrl}?task=${encodeURIComponent(taskId)}`;
    id.id = "chat-task-link";
    links.push(id);
    if (adminUrl) {
      const admin = make("a", "", "in the admin");
      admin.href = adminUrl.replace("TASK-ID", encodeURIComponent(taskId));
      admin.id = "chat-task-admin";
      links.push(" · ", admin);
    }
    taskShown.replaceChildren(...links);
  }

  function setTask(taskId, contextId) {
    if (contextId && contextId !== conversation.contextId) {
      conversation.contextId = contextId;
      contextField.value = contextId;
      contextShown.textContent = contextId;
    }
    if (taskId && taskId !== conversation.taskId) {
      conversation.taskId = taskId;
      linkTask(taskId);
    }
  }

  function setState(status) {
    const state = status.state || "";
    conversation.state = state;
    for (const pill of [turn ? turn.state : null, stateShown]) {
      if (!pill) continue;
      pill.textContent = stateName(state);
      pill.className = `pill state-${stateName(state)}`;
      pill.hidden = false;
    }
    showStatusMessage(status.message, state);
    cancelButton.disabled = !OPEN.has(state);
    // A question keeps the task: the next message answers it. Any other end starts the next
    // task in the same context.
    taskField.value = WAITING.has(state) ? conversation.taskId : "";
    turnHint.textContent = WAITING.has(state) ? "Your next message answers the agent's question." : "";
  }

  function onEvent(name, payload) {
    if (name === "error" || payload.error) {
      say(`The agent did not answer: ${payload.error.message}`);
      return;
    }
    if (payload.task) {
      const task = payload.task;
      setTask(task.id, task.contextId);
      for (const artifact of task.artifacts || []) showArtifact(task.id, artifact, false);
      setState(task.status || {});
    } else if (payload.statusUpdate) {
      const update = payload.statusUpdate;
      setTask(update.taskId, update.contextId);
      setState(update.status || {});
    } else if (payload.artifactUpdate) {
      const update = payload.artifactUpdate;
      setTask(update.taskId, update.contextId);
      showArtifact(update.taskId, update.artifact, Boolean(update.append));
    } else if (payload.message) {
      setTask("", payload.message.contextId);
      const reply = make("div", "parts");
      fillParts(reply, payload.message.parts, true);
      turn.artifacts.append(reply);
      turn.state.textContent = "message";
    }
    scrollDown();
  }

  // -- the stream -------------------------------------------------------------------------

  async function readEvents(body, handle) {
    const reader = body.getReader();
    const decoder = new TextDecoder();
    let buffer = "";
    for (;;) {
      const {value, done} = await reader.read();
      if (done) return;
      buffer += decoder.decode(value, {stream: true});
      let end;
      while ((end = buffer.indexOf("\n\n")) >= 0) {
        const frame = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        let name = "message";
        const data = [];
        for (const line of frame.split("\n")) {
          if (line.startsWith("event:")) name = line.slice(6).trim();
          else if (line.startsWith("data:")) data.push(line.slice(line.startsWith("data: ") ? 6 : 5));
        }
        if (data.length) handle(name, JSON.parse(data.join("\n")));
      }
    }
  }

  async function refusalOf(response) {
    const answer = await response.json().catch(() => ({}));
    return (answer.error && answer.error.message) || `HTTP ${response.status}`;
  }

  function say(text) {
    problem.textContent = text;
    problem.hidden = false;
  }

  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const text = textBox.value;
    if (!text.trim() || reading) return;
    const body = new FormData(form);
    problem.hidden = true;
    userTurn(text);
    textBox.value = "";
    turn = agentTurn();
    sendButton.disabled = true;
    reading = new AbortController();
    try {
      const response = await fetch(form.action, {
        method: "POST", body, credentials: "same-origin", signal: reading.signal,
        headers: {"Accept": "text/event-stream"},
      });
      const type = response.headers.get("Content-Type") || "";
      if (!response.ok || !type.startsWith("text/event-stream")) {
        throw new Error(await refusalOf(response));
      }
      await readEvents(response.body, onEvent);
    } catch (error) {
      if (error.name !== "AbortError") say(`The agent did not answer: ${error.message}`);
      // Refused before any event (a limit, say): the turn was never sent, not sending still.
      if (turn && turn.state.textContent === "sending") {
        turn.state.textContent = "not sent";
        turn.state.className = "pill off";
      }
    } finally {
      reading = null;
      sendButton.disabled = false;
    }
  });

  // Enter sends, as in any chat; Shift+Enter starts a new line (the hint under the box says
  // so). A key that ends an input method's composition is not a send.
  textBox.addEventListener("keydown", (event) => {
    if (event.key !== "Enter" || event.shiftKey || event.isComposing) return;
    event.preventDefault();
    if (!sendButton.disabled && textBox.value.trim()) form.requestSubmit();
  });

  cancelButton.addEventListener("click", async () => {
    if (!conversation.taskId) return;
    cancelButton.disabled = true;
    const body = new FormData();
    body.append("csrfmiddlewaretoken", form.elements.csrfmiddlewaretoken.value);
    body.append("taskId", conversation.taskId);
    try {
      const response = await fetch(root.dataset.cancelUrl, {method: "POST", body, credentials: "same-origin"});
      if (!response.ok) throw new Error(await refusalOf(response));
      const answer = await response.json();
      if (turn) setState(answer.task.status || {});
    } catch (error) {
      say(`The task was not canceled: ${error.message}`);
      cancelButton.disabled = !OPEN.has(conversation.state);
    }
  });

  document.getElementById("chat-new").addEventListener("click", () => {
    if (reading) reading.abort();
    conversation = fresh();
    turn = null;
    log.replaceChildren();
    taskField.value = "";
    contextField.value = "";
    taskShown.textContent = "none yet";
    contextShown.textContent = "new";
    stateShown.hidden = true;
    cancelButton.disabled = true;
    turnHint.textContent = "";
    problem.hidden = true;
    textBox.focus();
  });
})();
