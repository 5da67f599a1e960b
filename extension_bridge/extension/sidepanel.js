// chatagent side panel. Everything from the model or a page is rendered with
// textContent / DOM properties, never innerHTML.
//
// Test hook: open chrome-extension://<id>/sidepanel.html?tabs=12,34 as a page
// to fix the tab list to those Chrome tab ids (all checked); then call
// `await window.chatagentTest.ask("question")`, or fill #question and press
// Ask. `document.body.dataset.state` is idle | running | done | error.

const $ = (id) => document.getElementById(id);
const els = {
  hostStatus: $("host-status"),
  tabList: $("tab-list"),
  form: $("ask-form"),
  question: $("question"),
  ask: $("ask-button"),
  stop: $("stop-button"),
  error: $("error"),
  errorText: $("error-text"),
  retry: $("retry-button"),
  status: $("status"),
  answer: $("answer"),
  shots: $("shots"),
  notes: $("notes"),
  citations: $("citations"),
  citationList: $("citation-list"),
  meta: $("meta"),
};

const params = new URLSearchParams(location.search);
const fixedTabIds = params.has("tabs")
  ? params
      .get("tabs")
      .split(",")
      .map((s) => Number.parseInt(s, 10))
      .filter((n) => Number.isInteger(n))
  : null;

let port = null;
let hostState = { state: "idle" };
let current = null; // { id, tabs: Map<string, {title,url,index}>, events: [], resolve }
const checked = new Set(); // tab ids the user picked (kept across list refreshes)
let pickedDefault = false;

// ---------------------------------------------------------------- worker port

function connect() {
  port = chrome.runtime.connect({ name: "chatagent-panel" });
  port.onMessage.addListener(onMessage);
  port.onDisconnect.addListener(() => {
    // The service worker was restarted: reconnect; a running ask is lost.
    port = null;
    if (current) finish({ type: "error", code: "worker_restarted", message: "The extension restarted; ask again." });
    setTimeout(connect, 500);
  });
}

function send(msg) {
  if (!port) connect();
  port.postMessage(msg);
}

function onMessage(msg) {
  switch (msg.type) {
    case "host":
      hostState = msg;
      showHost();
      break;
    case "host_error":
      if (current) showError(msg.message, msg.code);
      else setStatus(`Host: ${msg.message}`);
      break;
    case "event":
      if (current && msg.id === current.id) onEvent(msg.event);
      break;
    case "tool_activity":
      if (current && msg.id === current.id) setStatus(toolStatus(msg.name, String(msg.tabId), msg.args));
      break;
    case "error":
      if (current && msg.id === current.id) finish({ type: "error", code: msg.code, message: msg.message });
      break;
  }
}

function showHost() {
  els.hostStatus.dataset.state = hostState.state;
  els.hostStatus.textContent =
    { ready: "Connected", connecting: "Connecting…", error: "Host unavailable", idle: "…" }[hostState.state] ??
    hostState.state;
  els.hostStatus.title = hostState.message || "";
  if (hostState.state === "error" && !current) showError(hostState.message, hostState.code);
  else if (hostState.state === "ready" && els.error.dataset.code?.startsWith("host_")) hideError();
}

// ---------------------------------------------------------------- tab picker

async function listTabs() {
  if (fixedTabIds) {
    const tabs = await Promise.all(fixedTabIds.map((id) => chrome.tabs.get(id).catch(() => null)));
    return tabs.filter(Boolean);
  }
  return chrome.tabs.query({ currentWindow: true });
}

async function renderTabs() {
  const tabs = await listTabs();
  if (!pickedDefault) {
    pickedDefault = true;
    if (fixedTabIds) fixedTabIds.forEach((id) => checked.add(id));
    else tabs.filter((t) => t.active).forEach((t) => checked.add(t.id));
  }
  const open = new Set(tabs.map((t) => t.id));
  for (const id of [...checked]) if (!open.has(id)) checked.delete(id);
  els.tabList.replaceChildren(
    ...tabs.map((t) => {
      const li = document.createElement("li");
      const label = document.createElement("label");
      const box = document.createElement("input");
      box.type = "checkbox";
      box.value = String(t.id);
      box.checked = checked.has(t.id);
      box.addEventListener("change", () => (box.checked ? checked.add(t.id) : checked.delete(t.id)));
      const text = document.createElement("span");
      text.className = "tab-text";
      const title = document.createElement("span");
      title.className = "tab-title";
      title.textContent = t.title || t.url || `Tab ${t.id}`;
      title.title = t.title || "";
      const hostName = document.createElement("span");
      hostName.className = "tab-host";
      hostName.textContent = hostOf(t.url || t.pendingUrl || "");
      text.append(title, hostName);
      label.append(box, text);
      li.append(label);
      return li;
    }),
  );
  return tabs;
}

function hostOf(url) {
  try {
    return new URL(url).host || url;
  } catch {
    return url;
  }
}

let renderPending = null;
function scheduleRender() {
  clearTimeout(renderPending);
  renderPending = setTimeout(() => renderTabs().catch(console.error), 100);
}
chrome.tabs.onUpdated.addListener((_id, info) => {
  if (info.title || info.url || info.status === "complete") scheduleRender();
});
chrome.tabs.onCreated.addListener(scheduleRender);
chrome.tabs.onRemoved.addListener(scheduleRender);
chrome.tabs.onActivated.addListener(scheduleRender);

// ---------------------------------------------------------------- asking

async function ask(question, opts = {}) {
  question = (question ?? "").trim();
  if (!question) {
    els.question.focus();
    throw new Error("Type a question first.");
  }
  if (current) throw new Error("A question is already running; press Stop first.");
  const tabIds = opts.tabIds ?? [...checked];
  if (!tabIds.length) {
    showError("Pick at least one tab to ask about.", "no_tabs");
    throw new Error("no tabs selected");
  }
  const all = await listTabs().catch(() => []);
  const byId = new Map(all.map((t) => [t.id, t]));
  const tabs = new Map();
  tabIds.forEach((id, i) => {
    const t = byId.get(id);
    tabs.set(String(id), { title: t?.title || `Tab ${id}`, url: t?.url || "", index: i + 1 });
  });

  resetOutput();
  const id = crypto.randomUUID();
  const done = new Promise((resolve) => {
    current = { id, tabs, events: [], resolve, started: performance.now() };
  });
  setRunning(true);
  setStatus(tabIds.length > 1 ? `Reading ${tabIds.length} tabs…` : "Reading the tab…");
  const msg = { type: "ask", id, question, tabIds };
  if (opts.model) msg.model = opts.model;
  if (opts.noCache) msg.noCache = true;
  send(msg);
  return done;
}

function stop() {
  if (!current) return;
  send({ type: "cancel", id: current.id });
  setStatus("Stopping…");
}

function tabLabel(tabId) {
  const t = current?.tabs.get(String(tabId));
  if (!t) return tabId ? `tab ${tabId}` : "the tab";
  const title = t.title.length > 40 ? `${t.title.slice(0, 39)}…` : t.title;
  return current.tabs.size > 1 ? `tab ${t.index} (“${title}”)` : `“${title}”`;
}

function toolStatus(name, tabId, args = {}) {
  const where = tabLabel(tabId ?? args.tab_id ?? args.tabId ?? args.tab);
  if (name === "scroll") {
    if (args.toText || args.to_text) return `Scrolling ${where} to “${args.toText || args.to_text}”…`;
    return `Scrolling ${where}…`;
  }
  if (name === "screenshot") return `Taking a screenshot of ${where}…`;
  if (name === "snapshot") return `Reading ${where} again…`;
  return `Running ${name} on ${where}…`;
}

function onEvent(ev) {
  current.events.push(ev);
  switch (ev.type) {
    case "pass_start":
      if (ev.pass > 1) {
        els.answer.textContent = "";
        setStatus(`Looking closer (pass ${ev.pass})${ev.reason ? `: ${ev.reason}` : ""}…`);
      } else {
        setStatus("Thinking…");
      }
      break;
    case "token":
      if (!els.answer.textContent) setStatus("");
      els.answer.append(document.createTextNode(ev.text));
      break;
    case "tool_call":
      setStatus(toolStatus(ev.name, null, ev.args || {}));
      break;
    case "tool_result":
      setStatus(ev.ok === false ? `${ev.name} failed: ${ev.text}` : "");
      break;
    case "screenshot":
      addScreenshot(ev);
      break;
    case "note":
      addNote(ev.tab_id ? `${tabLabel(ev.tab_id)}: ${ev.text}` : ev.text);
      break;
    case "done":
      finish(ev);
      break;
    case "error":
      finish(ev);
      break;
  }
}

function addScreenshot(ev) {
  const fig = document.createElement("figure");
  const img = document.createElement("img");
  img.src = `data:image/png;base64,${ev.png_base64}`;
  img.alt = `Screenshot of ${tabLabel(ev.tab_id)}`;
  const cap = document.createElement("figcaption");
  cap.textContent = `Screenshot of ${tabLabel(ev.tab_id)}`;
  fig.append(img, cap);
  els.shots.append(fig);
}

function addNote(text) {
  const li = document.createElement("li");
  li.textContent = text;
  els.notes.append(li);
}

function finish(ev) {
  const run = current;
  if (!run) return;
  current = null;
  setRunning(false);
  setStatus("");
  if (ev.type === "done") {
    els.answer.textContent = ev.answer; // authoritative: replaces the streamed text
    renderCitations(ev.citations || [], run);
    renderMeta(ev, run);
    document.body.dataset.state = "done";
  } else {
    showError(ev.message || "Something went wrong.", ev.code);
    document.body.dataset.state = "error";
  }
  run.resolve({
    ok: ev.type === "done",
    answer: ev.type === "done" ? ev.answer : null,
    done: ev.type === "done" ? ev : null,
    error: ev.type === "done" ? null : { code: ev.code, message: ev.message },
    events: run.events,
    text: els.answer.textContent,
  });
}

function renderCitations(citations, run) {
  if (!citations.length) {
    els.citations.hidden = true;
    return;
  }
  els.citationList.replaceChildren(
    ...citations.map((c) => {
      const li = document.createElement("li");
      const url = c.url || run.tabs.get(String(c.tab_id))?.url || "";
      const title = c.title || run.tabs.get(String(c.tab_id))?.title || url;
      let safe = false;
      try {
        safe = ["http:", "https:", "file:"].includes(new URL(url).protocol);
      } catch {}
      if (safe) {
        const a = document.createElement("a");
        a.href = url;
        a.textContent = title;
        a.title = url;
        a.addEventListener("click", (e) => {
          // Prefer switching to the tab that was read over opening a copy.
          const tabId = Number.parseInt(c.tab_id, 10);
          if (!Number.isInteger(tabId)) return;
          e.preventDefault();
          chrome.tabs.update(tabId, { active: true }).catch(() => chrome.tabs.create({ url }));
        });
        li.append(a);
      } else {
        li.textContent = title;
      }
      return li;
    }),
  );
  els.citations.hidden = false;
}

function renderMeta(ev, run) {
  const parts = [];
  if (ev.pass > 1) parts.push(`pass ${ev.pass}`);
  if (ev.usage && (ev.usage.input_tokens || ev.usage.output_tokens)) {
    parts.push(`${ev.usage.input_tokens} in / ${ev.usage.output_tokens} out tokens`);
  }
  const ms = ev.timings?.total_ms || performance.now() - run.started;
  parts.push(`${(ms / 1000).toFixed(1)} s`);
  if (ev.tool_calls) parts.push(`${ev.tool_calls} tool call${ev.tool_calls > 1 ? "s" : ""}`);
  if (ev.cached) parts.push("cached");
  if (ev.stop_reason && ev.stop_reason !== "answered") parts.push(`stopped: ${ev.stop_reason}`);
  els.meta.textContent = parts.join(" · ");
}

// ---------------------------------------------------------------- UI state

function resetOutput() {
  hideError();
  els.answer.textContent = "";
  els.shots.replaceChildren();
  els.notes.replaceChildren();
  els.citationList.replaceChildren();
  els.citations.hidden = true;
  els.meta.textContent = "";
}

function setRunning(running) {
  els.ask.disabled = running;
  els.stop.hidden = !running;
  document.body.dataset.state = running ? "running" : "idle";
}

function setStatus(text) {
  els.status.textContent = text;
}

function showError(message, code) {
  els.errorText.textContent = message;
  els.error.dataset.code = code || "";
  els.retry.hidden = !(code || "").startsWith("host_");
  els.error.hidden = false;
}

function hideError() {
  els.error.hidden = true;
  els.error.dataset.code = "";
  els.errorText.textContent = "";
}

els.form.addEventListener("submit", (e) => {
  e.preventDefault();
  ask(els.question.value).catch((err) => {
    if (err.message !== "no tabs selected") showError(err.message, "input");
  });
});
els.question.addEventListener("keydown", (e) => {
  if (e.key === "Enter" && !e.shiftKey && !e.isComposing) {
    e.preventDefault();
    els.form.requestSubmit();
  }
});
els.stop.addEventListener("click", stop);
els.retry.addEventListener("click", () => {
  hideError();
  send({ type: "reconnect" });
});

// For automated tests (and the curious): drive the panel without clicking.
window.chatagentTest = {
  ask: (question, opts) => ask(question, opts),
  stop,
  selectedTabIds: () => [...checked],
  hostState: () => ({ ...hostState }),
  refreshTabs: () => renderTabs(),
};

connect();
renderTabs().catch((e) => showError(`Could not list tabs: ${e.message}`, "tabs"));
els.question.focus();
