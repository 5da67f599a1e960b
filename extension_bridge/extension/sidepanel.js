// chatagent side panel: a conversation per tab selection, answers rendered
// as sanitised markdown (markdown.js), and the host's settings.
//
// Test hook: open chrome-extension://<id>/sidepanel.html?tabs=12,34 as a page
// to fix the tab list to those Chrome tab ids (all checked); then call
// `await window.chatagentTest.ask("question")`, or fill #question and press
// Ask. `document.body.dataset.state` is idle | running | done | stopped | error.

import { clearThreads, loadThreads, saveThread, tabsSince } from "./history.js";
import { citationChip, clip, passageChip, renderMarkdown } from "./markdown.js";

const $ = (id) => document.getElementById(id);
const els = {
  hostStatus: $("host-status"),
  modelChip: $("model-chip"),
  newButton: $("new-button"),
  historyButton: $("history-button"),
  history: $("history"),
  historyList: $("history-list"),
  historyClear: $("history-clear"),
  historyClose: $("history-close"),
  settingsButton: $("settings-button"),
  tabs: $("tabs"),
  tabsTitle: $("tabs-title"),
  tabList: $("tab-list"),
  threadBox: $("thread-box"),
  form: $("ask-form"),
  question: $("question"),
  ask: $("ask-button"),
  stop: $("stop-button"),
  error: $("error"),
  errorText: $("error-text"),
  retry: $("retry-button"),
  settings: $("settings"),
  settingsForm: $("settings-form"),
  settingsMessage: $("settings-message"),
  settingsPath: $("settings-path"),
  settingsCancel: $("settings-cancel"),
  viewer: $("viewer"),
  viewerImage: $("viewer-image"),
  selection: $("selection"),
  selectionWhere: $("selection-where"),
  selectionText: $("selection-text"),
  selectionUse: $("selection-use"),
  selectionDismiss: $("selection-dismiss"),
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
let hostSettings = null; // the host's `settings` message
const pendingReplies = new Map(); // request id -> {resolve, reject}
let current = null; // the running question: { id, thread, turn, events, resolve, started, stopping }
const checked = new Set(); // tab ids the user picked (kept across list refreshes)
let pickedDefault = false;
let tabsById = new Map(); // the window's tabs, as last listed
const threads = new Map(); // selection key -> thread

// What the panel tells the user to do, by error code: in the panel, not in a terminal.
const ADVICE = {
  model_auth: "The model service refused the API key. Open Settings (⚙) and enter a valid key.",
  model_config: "The model is not set up yet. Open Settings (⚙) to add its key, or choose the offline model.",
  model_not_found: "The model service does not know that model. Open Settings (⚙) and check its name.",
  model_unavailable: "The model service could not be reached. Check that it is running, or open Settings (⚙) to check its address.",
  rate_limited: "The model service is rate-limiting requests. Wait a moment, then ask again.",
  model_timeout: "The model took too long to answer. Ask again, or choose a faster model in Settings (⚙).",
  no_readable_tabs: "None of the chosen tabs can be read (browser pages, the Web Store and PDFs are off limits). Pick another tab.",
  worker_restarted: "The extension restarted. Ask again.",
};
// Host states a Retry can end (once the cause is fixed); a connection clears them.
const retryable = (code) => (code || "").startsWith("host_") || code === "config_error";
const SETTINGS_CODES = new Set(["model_auth", "model_config", "model_not_found", "model_unavailable", "model_timeout"]);

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
      if (current) setTurnStatus(current.turn, msg.message);
      break;
    case "event":
      if (current && msg.id === current.id) {
        if (Array.isArray(msg.tabs)) learnLabels(current.thread, msg.tabs);
        onEvent(msg.event);
      }
      break;
    case "passage_shown":
      passageShown(msg);
      break;
    case "tabs_read":
      if (current && msg.id === current.id && Array.isArray(msg.tabs)) current.read = msg.tabs;
      break;
    case "fingerprints":
      settle(msg.id, msg.prints || {});
      break;
    case "selection":
      // From the context menu or the keyboard shortcut: attached at once.
      if (typeof msg.text === "string" && Number.isInteger(msg.tabId)) offerSelection(msg.tabId, msg.text, true);
      break;
    case "settings":
      showSettings(msg);
      settle(msg.id, msg);
      break;
    case "model_checked":
      settle(msg.id, msg);
      break;
    case "error":
      if (pendingReplies.has(msg.id)) settle(msg.id, null, msg);
      else if (current && msg.id === current.id) finish({ type: "error", code: msg.code, message: msg.message });
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
  else if (hostState.state === "ready") {
    if (retryable(els.error.dataset.code)) hideError();
    request({ type: "settings_get" }).catch(() => {});
  }
}

// ---------------------------------------------------------------- settings

// A request to the worker (settings, page fingerprints), answered by a message with its id.
function request(msg) {
  const id = crypto.randomUUID();
  const done = new Promise((resolve, reject) => pendingReplies.set(id, { resolve, reject }));
  send({ ...msg, id });
  return done;
}

function settle(id, value, error) {
  const waiting = pendingReplies.get(id);
  if (!waiting) return;
  pendingReplies.delete(id);
  if (error) waiting.reject(Object.assign(new Error(error.message), { code: error.code }));
  else waiting.resolve(value);
}

function showSettings(msg) {
  hostSettings = msg;
  els.modelChip.textContent = modelInWords(msg.model);
  els.modelChip.hidden = false;
  els.modelChip.title = `Answers come from ${modelInWords(msg.model)}. Change it in Settings.`;
  if (!els.settings.open) fillSettingsForm(msg);
}

function modelInWords(model) {
  return model === "extractive" ? "Offline" : model;
}

function fillSettingsForm(msg) {
  const s = msg.settings;
  // The host says which group the model is chosen in, and its name there: `ollama:llama3.2`
  // is an OpenAI-compatible server's llama3.2, at Ollama's address.
  const { provider, model, baseUrl } = msg.form;
  els.settingsForm.elements.provider.value = provider;
  $("gemini-model").value = provider === "gemini" ? model : "";
  $("openai-model").value = provider === "openai" ? model : "";
  $("gemini-base-url").value = s.geminiBaseUrl.value || "";
  $("openai-base-url").value = baseUrl || s.openaiBaseUrl.value || "";
  $("context-window").value = s.contextWindow?.value || "";
  for (const field of Object.keys(KEY_FIELDS)) $(field).value = "";
  showKeys(msg);
  for (const [hint, key] of [
    ["gemini-base-url-hint", "geminiBaseUrl"],
    ["openai-base-url-hint", "openaiBaseUrl"],
    ["context-window-hint", "contextWindow"],
  ]) {
    $(hint).textContent = s[key] ? envHint(s[key]) : "";
  }
  els.settingsPath.textContent = msg.path ? ` (${msg.path})` : "";
  showProviderGroup();
}

// The API key fields: what the host says of each key, and its Remove button.
const KEY_FIELDS = { "google-api-key": "googleApiKey", "openai-api-key": "openaiApiKey" };
const KEY_NAMES = { googleApiKey: "Gemini API key", openaiApiKey: "server API key" };

function showKeys(msg) {
  for (const [field, key] of Object.entries(KEY_FIELDS)) {
    const shown = msg.settings[key];
    // A key saved for another endpoint is not sent to this one: the key for this server is needed.
    $(field).placeholder = shown.savedFor
      ? `saved for ${shown.savedFor} — enter the key for this server`
      : shown.value ? `${savedKey(shown.value)} — type to replace` : "not set";
    // Only a key the settings file holds can be removed here (the environment's is not the panel's).
    $(`${field}-remove`).hidden = shown.source !== "file";
    // One entered here is used for this server even so (the environment's is for another).
    $(`${field}-hint`).textContent = shown.savedFor ? "" : envHint(shown);
  }
}

function envHint(shown) {
  return shown.source === "env" ? `Set by the ${shown.origin}, which takes precedence over what you save here.` : "";
}

// The host masks a key as "…abcd (set)", or as "(set)" alone when it is too short to show any of.
function savedKey(masked) {
  const ending = masked.replace(/\s*\(set\)$/, "");
  return ending ? `saved (${ending})` : "saved";
}

function showProviderGroup() {
  const provider = els.settingsForm.elements.provider.value;
  for (const group of els.settingsForm.querySelectorAll(".group")) group.hidden = group.dataset.provider !== provider;
  $("model-test-row").hidden = provider !== "gemini" && provider !== "openai";
  $("context-window-row").hidden = provider !== "gemini" && provider !== "openai"; // the offline model has none
}

// The form's values for `provider`, as Save sends them (an OpenAI-compatible model's name may be missing).
function formValues(provider) {
  const values = {};
  if (provider === "extractive") values.model = "extractive";
  if (provider === "gemini") {
    values.model = $("gemini-model").value.trim() || "gemini-2.5-flash";
    values.geminiBaseUrl = $("gemini-base-url").value.trim() || null;
    if ($("google-api-key").value.trim()) values.googleApiKey = $("google-api-key").value.trim();
  }
  if (provider === "openai") {
    const name = $("openai-model").value.trim();
    if (name) values.model = `openai:${name}`;
    values.openaiBaseUrl = $("openai-base-url").value.trim() || null;
    if ($("openai-api-key").value.trim()) values.openaiApiKey = $("openai-api-key").value.trim();
  }
  // Empty: the model's server says (the setting is removed from the settings file).
  if (provider === "gemini" || provider === "openai") values.contextWindow = $("context-window").value.trim() || null;
  return values;
}

function settingsValues() {
  const provider = els.settingsForm.elements.provider.value;
  const values = formValues(provider);
  if (!values.model) throw new Error("Type the model's name as the server knows it (e.g. llama3.1).");
  return values;
}

// ---------------------------------------------------------------- the server's models, "Test connection"

const SERVED_SHOWN = 12; // names shown as buttons; the model field suggests them all
const latest = { list: 0, test: 0 }; // the newest request of each kind: an older answer is dropped

// Asks the host, with the form as typed (nothing is saved), what the chosen server serves;
// `shown`: the person pressed Test connection, so the answer is said, not only listed.
async function checkServer(shown) {
  const provider = els.settingsForm.elements.provider.value;
  if (provider !== "gemini" && provider !== "openai") return;
  const result = $("model-test-result");
  const mine = { list: ++latest.list, test: shown ? ++latest.test : latest.test };
  if (shown) {
    result.dataset.kind = "";
    result.textContent = "Testing…";
  }
  let msg = null;
  let failed = null;
  try {
    msg = await request({ type: "model_check", provider, values: formValues(provider) });
  } catch (e) {
    failed = hostState.state === "error" ? `The host is not available: ${hostState.message}` : e.message;
  }
  if (mine.list === latest.list && provider === els.settingsForm.elements.provider.value) {
    showServed(provider, msg ? msg.models : []);
  }
  if (!shown || mine.test !== latest.test) return;
  result.dataset.kind = msg && !msg.problem ? "ok" : "error";
  if (failed) result.textContent = failed;
  else if (msg.problem) result.textContent = `✗ ${msg.endpoint} — ${msg.problem}`;
  else if (msg.model) result.textContent = `✓ ${msg.endpoint} — connected; it serves ${modelInWords(msg.model)}.`;
  else result.textContent = `✓ ${msg.endpoint} — connected; it serves ${msg.models.length} model${msg.models.length === 1 ? "" : "s"}.`;
}

// The models `provider`'s server lists: suggested by its model field, the first few as buttons.
function showServed(provider, models) {
  const box = $(`${provider}-served`);
  box.replaceChildren();
  box.hidden = !models.length;
  if (models.length || provider === "openai") {
    $(`${provider}-models`).replaceChildren(...models.map((m) => Object.assign(document.createElement("option"), { value: m })));
  }
  if (!models.length) return;
  const label = document.createElement("span");
  label.textContent = "Served there:";
  box.append(label);
  for (const name of models.slice(0, SERVED_SHOWN)) {
    const use = document.createElement("button");
    use.type = "button";
    use.textContent = name; // a server's words: text, never markup
    use.title = `Use ${name}`;
    use.addEventListener("click", () => {
      $(`${provider}-model`).value = name;
      clearTest();
    });
    box.append(use);
  }
  if (models.length > SERVED_SHOWN) {
    const more = document.createElement("span");
    more.textContent = `and ${models.length - SERVED_SHOWN} more (type to see them)`;
    box.append(more);
  }
}

function clearTest() {
  latest.test++;
  $("model-test-result").textContent = "";
  $("model-test-result").dataset.kind = "";
}

// `said`: what was done, for the message; `fill`: what of the form to show again from the host's answer.
async function saveSettings(values, { said = "Saved", fill = fillSettingsForm } = {}) {
  els.settingsMessage.dataset.kind = "";
  els.settingsMessage.textContent = "Saving…";
  try {
    const msg = await request({ type: "settings_set", values });
    fill(msg);
    // Saved, but the first question would fail (a missing key): say so now, and what to do.
    els.settingsMessage.dataset.kind = msg.problem ? "error" : "ok";
    els.settingsMessage.textContent = msg.problem
      ? `${said}, but ${msg.problem}`
      : `${said}. ${modelInWords(msg.model)} answers the next question.`;
    return msg;
  } catch (e) {
    els.settingsMessage.dataset.kind = "error";
    els.settingsMessage.textContent =
      hostState.state === "error" ? `The host is not available: ${hostState.message}` : e.message;
    throw e;
  }
}

// What the user chose or typed since the settings opened: settings the host sends
// later (the first ones, when opened before they came) do not undo it.
let settingsTouched = false;
const LOADING_SETTINGS = "Loading the settings…";

// What the host says is wrong with the settings (a missing key), or nothing.
function showSettingsProblem(msg) {
  els.settingsMessage.dataset.kind = msg.problem ? "error" : "";
  els.settingsMessage.textContent = msg.problem || "";
}

function openSettings() {
  settingsTouched = false;
  els.settingsMessage.textContent = "";
  els.settingsMessage.dataset.kind = "";
  if (hostSettings) {
    fillSettingsForm(hostSettings);
    showSettingsProblem(hostSettings);
  } else if (hostState.state === "error") {
    els.settingsMessage.dataset.kind = "error";
    els.settingsMessage.textContent = `Settings are kept by the chatagent host, which is not available. ${hostState.message}`;
  } else els.settingsMessage.textContent = LOADING_SETTINGS;
  $("settings-save").disabled = hostState.state === "error";
  $("model-test").disabled = hostState.state === "error";
  showProviderGroup();
  clearTest();
  if (!els.settings.open) els.settings.showModal();
  if (!hostSettings && hostState.state !== "error") {
    request({ type: "settings_get" }).then((msg) => {
      if (settingsTouched) showKeys(msg);
      else fillSettingsForm(msg);
      if (els.settingsMessage.textContent === LOADING_SETTINGS) showSettingsProblem(msg);
      checkServer(false);
    }, () => {});
  } else if (hostState.state !== "error") checkServer(false);
}

// A server changed in the form: its list again, and an earlier test's answer no longer holds.
const SERVER_FIELDS = new Set(["gemini-base-url", "google-api-key", "openai-base-url", "openai-api-key"]);
els.settingsForm.addEventListener("change", (e) => {
  if (e.target.name === "provider" || SERVER_FIELDS.has(e.target.id)) {
    if (e.target.name === "provider") showProviderGroup();
    clearTest();
    checkServer(false);
  }
});
for (const kind of ["input", "change"]) els.settingsForm.addEventListener(kind, () => { settingsTouched = true; });
els.settingsForm.addEventListener("input", (e) => {
  if (e.target.id === "gemini-model" || e.target.id === "openai-model" || SERVER_FIELDS.has(e.target.id)) clearTest();
});
$("model-test").addEventListener("click", () => checkServer(true));
els.settingsForm.addEventListener("submit", (e) => {
  e.preventDefault(); // stay open until the host has saved
  let values;
  try {
    values = settingsValues();
  } catch (err) {
    els.settingsMessage.dataset.kind = "error";
    els.settingsMessage.textContent = err.message;
    return;
  }
  saveSettings(values).catch(() => {});
});
// Removed at once by the host (a null value), which owns the file; the rest of the form stays as typed.
for (const button of els.settingsForm.querySelectorAll(".remove-key")) {
  button.addEventListener("click", () => {
    const key = button.dataset.key;
    saveSettings({ [key]: null }, { said: `Removed the saved ${KEY_NAMES[key]}`, fill: showKeys }).then(
      () => $(button.id.replace(/-remove$/, "")).focus(), // the button is gone: focus where a new key goes
      () => {},
    );
  });
}
els.settingsCancel.addEventListener("click", () => els.settings.close());
els.settingsButton.addEventListener("click", openSettings);
els.modelChip.addEventListener("click", openSettings);

// ---------------------------------------------------------------- tab picker

async function listTabs() {
  if (fixedTabIds) {
    const tabs = await Promise.all(fixedTabIds.map((id) => chrome.tabs.get(id).catch(() => null)));
    return tabs.filter(Boolean);
  }
  // Only pages the extension may read: not the browser's own pages, nor other extensions'.
  const tabs = await chrome.tabs.query({ currentWindow: true });
  return tabs.filter((t) => /^(https?|file):/.test(t.url || t.pendingUrl || ""));
}

async function renderTabs() {
  const tabs = await listTabs();
  tabsById = new Map(tabs.map((t) => [t.id, t]));
  if (!pickedDefault) {
    pickedDefault = true;
    if (fixedTabIds) fixedTabIds.forEach((id) => checked.add(id));
    else tabs.filter((t) => t.active).forEach((t) => checked.add(t.id));
  }
  for (const id of [...checked]) if (!tabsById.has(id)) checked.delete(id);
  els.tabList.replaceChildren(
    ...tabs.map((t) => {
      const li = document.createElement("li");
      const label = document.createElement("label");
      const box = document.createElement("input");
      box.type = "checkbox";
      box.value = String(t.id);
      box.checked = checked.has(t.id);
      box.addEventListener("change", () => {
        if (box.checked) checked.add(t.id);
        else checked.delete(t.id);
        if (els.error.dataset.code === "no_tabs") hideError(); // it has done its job
        selectionChanged();
      });
      const text = document.createElement("span");
      text.className = "tab-text";
      const title = document.createElement("span");
      title.className = "tab-title";
      title.textContent = t.title || t.url || "Untitled tab";
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
  selectionChanged();
  showSelectionWhere();
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

// ---------------------------------------------------------------- threads

// One conversation per selection of tabs: follow-ups carry its history, and a
// different selection is a different conversation (read afresh, no "now at" notes).
function selectionKey() {
  return [...checked].sort((a, b) => a - b).join(",");
}

function threadFor(key) {
  let thread = threads.get(key);
  if (!thread) {
    const el = document.createElement("section");
    el.className = "thread";
    // labels: "[Tab N]" label -> Chrome tab id, as the host numbers the conversation's tabs.
    thread = { key, conversation: crypto.randomUUID(), tabIds: null, labels: new Map(), el, turns: 0, saved: null };
    threads.set(key, thread);
  }
  return thread;
}

function selectionChanged() {
  const n = checked.size;
  els.tabsTitle.textContent = n ? `Tabs to ask about (${n} selected)` : "Tabs to ask about (none selected)";
  if (current) return; // the running answer stays in view; the next question uses the new selection
  showThread(threadFor(selectionKey()));
}

function showThread(thread) {
  if (els.threadBox.firstChild !== thread.el) els.threadBox.replaceChildren(thread.el);
  els.newButton.disabled = thread.turns === 0;
  if (!thread.turns && !thread.el.firstChild) thread.el.append(emptyHint());
  if (thread.restored && !thread.checked) sayWhatChanged(thread).catch(console.error);
}

function emptyHint() {
  const box = document.createElement("div");
  box.className = "empty";
  const p = document.createElement("p");
  p.textContent = checked.size
    ? "Ask a question about the selected tabs. Follow-up questions keep the conversation."
    : "Tick the tabs to ask about.";
  box.append(p);
  if (checked.size) box.append(suggestions(checked.size));
  return box;
}

// Requests about the tabs as a whole, one click each: sent as if typed (the host gives each tab an overview of its page).
function suggestions(tabs) {
  const group = document.createElement("div");
  group.className = "suggestions";
  group.setAttribute("role", "group");
  group.setAttribute("aria-label", "Suggested requests");
  for (const request of [tabs > 1 ? "Summarize these pages" : "Summarize this page", "What are the main points?"]) {
    const button = document.createElement("button");
    button.type = "button";
    button.className = "suggestion";
    button.textContent = request;
    button.disabled = Boolean(current);
    button.addEventListener("click", () => {
      els.question.value = request;
      els.form.requestSubmit();
    });
    group.append(button);
  }
  return group;
}

function newConversation() {
  if (current) return;
  threads.delete(selectionKey());
  showThread(threadFor(selectionKey()));
  els.question.focus();
}
els.newButton.addEventListener("click", newConversation);

function tabInfo(tabId) {
  const t = tabsById.get(Number(tabId));
  return { tabId: Number(tabId), title: t?.title || t?.url || "", url: t?.url || "" };
}

// The host's numbers count only the tabs it was sent: not the panel's list
// when a tab was skipped (a PDF, a frozen page), so they are learnt, not guessed.
function learnLabels(thread, tabs) {
  for (const t of tabs) {
    if (Number.isInteger(t?.tabId) && typeof t.label === "string") thread.labels.set(t.label, t.tabId);
  }
}

function tabInWords(tabId) {
  const t = tabInfo(tabId);
  if (!t.title) return "the tab";
  const title = t.title.length > 40 ? `${t.title.slice(0, 39)}…` : t.title;
  return `the “${title}” tab`;
}

// ---------------------------------------------------------------- the selection

// Text selected in a tab: offered above the question box, then (on "Ask about
// the selection", the context menu or the shortcut) attached to the next
// question, whose context leads with it.
const MAX_SELECTION_CHARS = 20000; // the host's bound (chatagent.limits.MAX_SELECTION_CHARS)
let selection = null; // { tabId, text, attached }
let dismissed = ""; // a selection the person said no to is not offered again

// Runs in the page: the selected text, if any (not in a text field).
function pageSelection(max) {
  const s = getSelection();
  return s && !s.isCollapsed ? s.toString().slice(0, max) : "";
}

async function readSelection(tabId) {
  try {
    const [res] = await chrome.scripting.executeScript({ target: { tabId }, func: pageSelection, args: [MAX_SELECTION_CHARS] });
    return typeof res?.result === "string" ? res.result : "";
  } catch {
    return ""; // a page the extension may not read
  }
}

async function refreshSelection() {
  if (selection?.attached) return selection;
  // The tab in front first, then the ticked ones.
  const [active] = fixedTabIds ? [] : await chrome.tabs.query({ active: true, currentWindow: true });
  const ids = [...new Set([...(active && tabsById.has(active.id) ? [active.id] : []), ...checked])];
  for (const tabId of ids) {
    const text = (await readSelection(tabId)).trim();
    if (text && text !== dismissed) return offerSelection(tabId, text, false);
  }
  clearSelection();
  return null;
}

function offerSelection(tabId, text, attached) {
  text = text.trim().slice(0, MAX_SELECTION_CHARS);
  if (!text) return null;
  selection = { tabId, text, attached };
  els.selection.dataset.attached = String(attached);
  showSelectionWhere();
  els.selectionText.textContent = clip(text, 240);
  els.selectionText.title = clip(text, 1000);
  els.selection.hidden = false;
  els.question.placeholder = attached ? "Ask about the selected text… (Enter to ask)" : QUESTION_PLACEHOLDER;
  if (attached) els.question.focus();
  return selection;
}

// Which tab it is in, by title (once the tabs are listed: a panel opened by the shortcut gets the selection first).
function showSelectionWhere() {
  if (selection) els.selectionWhere.textContent = `${selection.attached ? "Asking about" : "Selected in"} ${tabInWords(selection.tabId)}:`;
}

function clearSelection() {
  selection = null;
  els.selection.hidden = true;
  els.selection.dataset.attached = "false";
  els.question.placeholder = QUESTION_PLACEHOLDER;
}

const QUESTION_PLACEHOLDER = els.question.placeholder;
els.selectionUse.addEventListener("click", () => selection && offerSelection(selection.tabId, selection.text, true));
els.selectionDismiss.addEventListener("click", () => {
  dismissed = selection?.text || "";
  clearSelection();
  els.question.focus();
});
// Coming back to the panel (after selecting in the page) or to another tab: look again.
const lookAgain = () => {
  if (!current) refreshSelection().catch(() => {});
};
window.addEventListener("focus", lookAgain);
document.addEventListener("pointerenter", lookAgain);
document.addEventListener("visibilitychange", () => document.visibilityState === "visible" && lookAgain());
chrome.tabs.onActivated.addListener(lookAgain);

// ---------------------------------------------------------------- asking

async function ask(question, opts = {}) {
  question = (question ?? "").trim();
  const about = selection?.attached ? selection : null;
  if (!question && about) question = "Explain the selected text.";
  if (!question) {
    els.question.focus();
    throw new Error("Type a question first.");
  }
  if (current) throw new Error("A question is already running; press Stop first.");
  if (hostState.state === "error") {
    showError(hostState.message, hostState.code); // no answer can come: no turn for it
    throw new Error("no host");
  }
  const tabIds = opts.tabIds ?? [...checked];
  // The selection's tab is asked about, ticked or not.
  if (about && !tabIds.includes(about.tabId)) tabIds.push(about.tabId);
  if (!tabIds.length) {
    showError("Tick at least one tab to ask about.", "no_tabs");
    throw new Error("no tabs selected");
  }
  hideError();
  const thread = threadFor(opts.tabIds ? [...tabIds].sort((a, b) => a - b).join(",") : selectionKey());
  showThread(thread);
  // Keep the thread's first tab order: the host numbers the tabs it reads in it ([Tab 1]).
  thread.tabIds = thread.tabIds ?? [...tabIds];
  const ordered = [...thread.tabIds.filter((id) => tabIds.includes(id)), ...tabIds.filter((id) => !thread.tabIds.includes(id))];
  const turn = addTurn(thread, question);
  const id = crypto.randomUUID();
  const done = new Promise((resolve) => {
    current = { id, thread, turn, events: [], resolve, started: performance.now(), text: "", stopping: false, question, about };
  });
  setRunning(true);
  setTurnStatus(turn, ordered.length > 1 ? `Reading ${ordered.length} tabs…` : `Reading ${tabInWords(ordered[0])}…`);
  const msg = { type: "ask", id, question, tabIds: ordered, conversation: thread.conversation, earlier: earlierTurns(thread) };
  if (about) {
    msg.selection = { tabId: about.tabId, text: about.text };
    addSelectionQuote(turn, about);
    dismissed = about.text; // asked about: not offered again
    clearSelection();
  }
  if (opts.model) msg.model = opts.model;
  if (opts.noCache) msg.noCache = true;
  send(msg);
  return done;
}

// The thread's last answered turns, sent with each ask: a host that restarted
// since (a browser restart) takes them as the conversation's history.
const EARLIER_TURNS = 8; // the host's bounds (extension_bridge/messages.py)
const EARLIER_ANSWER_CHARS = 8000;
const QUESTION_CHARS = 8000;
function earlierTurns(thread) {
  return (thread.saved?.turns || [])
    .filter((t) => t.state === "done" && t.question)
    .slice(-EARLIER_TURNS)
    .map((t) => ({ question: t.question.slice(0, QUESTION_CHARS), answer: (t.answer || "").slice(0, EARLIER_ANSWER_CHARS) }));
}

function addSelectionQuote(turn, about) {
  const quote = document.createElement("blockquote");
  quote.className = "asked-selection";
  quote.textContent = clip(about.text, 240);
  quote.title = `Selected in ${tabInWords(about.tabId)}`;
  turn.querySelector(".question").after(quote);
}

function addTurn(thread, question) {
  thread.el.querySelector(".empty")?.remove();
  thread.turns += 1;
  els.newButton.disabled = false;
  const turn = document.createElement("article");
  turn.className = "turn";
  turn.dataset.state = "running";
  const q = document.createElement("p");
  q.className = "question";
  q.textContent = question;
  const answer = document.createElement("div");
  answer.className = "answer markdown";
  const status = document.createElement("p");
  status.className = "turn-status";
  status.setAttribute("role", "status");
  const shots = document.createElement("div");
  shots.className = "shots";
  const notes = document.createElement("ul");
  notes.className = "notes";
  const sources = document.createElement("div");
  sources.className = "sources";
  sources.hidden = true;
  const meta = document.createElement("footer");
  meta.className = "meta";
  turn.append(q, answer, status, shots, notes, sources, meta);
  thread.el.append(turn);
  turn.scrollIntoView({ block: "end" });
  return turn;
}

// How long Stop waits for the host to confirm before the panel ends the answer itself.
const STOP_WAIT_MS = 3000;

function stop() {
  if (!current) return;
  const run = current;
  send({ type: "cancel", id: run.id });
  setTurnStatus(run.turn, "Stopping…");
  if (run.stopping) return;
  run.stopping = true;
  // A host (or a page) that never answers must not hold the panel: the answer
  // ends here, and anything that still comes for it is ignored.
  setTimeout(() => {
    if (current === run) finish({ type: "error", code: "aborted", message: "The host did not confirm the stop." });
  }, STOP_WAIT_MS);
}

let renderQueued = false;
function renderStreaming() {
  // At most once a frame: re-rendering markdown on every token would be quadratic.
  if (renderQueued) return;
  renderQueued = true;
  requestAnimationFrame(() => {
    renderQueued = false;
    if (current) renderAnswer(current.turn, current.text, current.thread, null);
  });
}

function renderAnswer(turn, text, thread, citations) {
  const byLabel = new Map((citations || []).filter((c) => !c.block).map((c) => [String(c.label), c]));
  const passages = citations ? passagesOf(citations) : null;
  // Before the answer's citations are known, a passage id stays as written; after, one that names nothing goes.
  const passageFor = (block) => (passages ? passages.get(block) ?? null : undefined);
  const tabFor = (label) => {
    const cited = byLabel.get(label);
    if (cited) return { tabId: Number(cited.tab_id), title: cited.title || tabInfo(cited.tab_id).title, url: cited.url };
    const id = thread.labels.get(label); // by the host's numbering, not by position in the panel
    return id == null ? null : tabInfo(id);
  };
  const box = els.threadBox;
  const following = box.scrollHeight - box.scrollTop - box.clientHeight < 40; // the reader is at the end
  turn.querySelector(".answer").replaceChildren(renderMarkdown(text, tabFor, passageFor));
  if (following) box.scrollTop = box.scrollHeight;
}

function onEvent(ev) {
  const { turn } = current;
  current.events.push(ev);
  switch (ev.type) {
    case "pass_start":
      if (ev.pass > 1) {
        current.text = "";
        renderAnswer(turn, "", current.thread, null);
        setTurnStatus(turn, "The page text was not enough; looking at the page itself…");
      } else {
        setTurnStatus(turn, "Thinking…");
      }
      break;
    case "token":
      if (!current.text) setTurnStatus(turn, "");
      current.text += ev.text;
      renderStreaming();
      break;
    case "tool_call":
      setTurnStatus(turn, ev.words || "Working…"); // the host words it, naming the tab by its title
      break;
    case "tool_result":
      if (ev.ok === false) setTurnStatus(turn, `That did not work (${ev.text}); trying another way…`);
      break;
    case "screenshot":
      addScreenshot(turn, ev);
      break;
    case "note":
      addNote(turn, ev.tab_id ? `${tabInWords(ev.tab_id)}: ${ev.text}` : ev.text);
      break;
    case "done":
    case "error":
      finish(ev);
      break;
  }
}

function addScreenshot(turn, ev) {
  const button = document.createElement("button");
  button.type = "button";
  button.className = "shot";
  const img = document.createElement("img");
  img.src = `data:image/png;base64,${ev.png_base64}`;
  img.alt = `What chatagent saw of ${tabInWords(ev.tab_id)}`;
  button.title = `${img.alt} (open full size)`;
  button.append(img);
  button.addEventListener("click", () => {
    els.viewerImage.src = img.src;
    els.viewerImage.alt = img.alt;
    els.viewer.showModal();
  });
  turn.querySelector(".shots").append(button);
}

function addNote(turn, text) {
  const li = document.createElement("li");
  li.textContent = text;
  turn.querySelector(".notes").append(li);
}

function finish(ev) {
  const run = current;
  if (!run) return;
  current = null;
  const { turn, thread } = run;
  setRunning(false);
  setTurnStatus(turn, "");
  let state;
  if (ev.type === "done") {
    renderAnswer(turn, ev.answer, thread, ev.citations); // authoritative: replaces the streamed text
    renderSources(turn, ev.citations || [], thread, ev.overviews || [], ev.shares || []);
    renderMeta(turn, ev, run);
    addCopy(turn, ev.answer);
    state = "done";
  } else if (ev.code === "aborted" && run.stopping) {
    if (run.text) renderAnswer(turn, run.text, thread, null);
    setTurnStatus(turn, "Stopped.");
    state = "stopped";
  } else {
    if (run.text) renderAnswer(turn, run.text, thread, null);
    showTurnError(turn, ev);
    state = "error";
  }
  turn.dataset.state = state;
  document.body.dataset.state = state;
  turn.scrollIntoView({ block: "nearest" });
  const saving = keep(run, ev, state).catch((e) => console.warn("chatagent: could not save the thread", e));
  if (checked.size && selectionKey() !== thread.key) showThread(threadFor(selectionKey()));
  const result = {
    ok: ev.type === "done",
    answer: ev.type === "done" ? ev.answer : null,
    done: ev.type === "done" ? ev : null,
    error: ev.type === "done" ? null : { code: ev.code, message: ev.message },
    stopped: state === "stopped",
    events: run.events,
    text: turn.querySelector(".answer").innerText,
  };
  saving.then(() => run.resolve(result)); // (for tests) once the thread is saved
}

// ---------------------------------------------------------------- threads that last

// Each finished turn saves its thread (history.js): what was asked and
// answered, with its sources, and the tabs as they were read.
async function keep(run, ev, state) {
  const { thread, turn } = run;
  const saved = thread.saved ?? { id: thread.conversation, tabs: [], labels: [], turns: [] };
  thread.saved = saved;
  savedThreads.set(saved.id, thread);
  if (run.read?.length) {
    // A restored thread's tabs are open under new ids: each saved tab is known by its id now.
    const now = (t) => thread.idsNow?.get(t.tabId) ?? t.tabId;
    const others = saved.tabs.filter((t) => !run.read.some((r) => r.tabId === now(t)));
    saved.tabs = [...others, ...run.read];
  }
  saved.labels = [...thread.labels];
  saved.turns.push({
    question: run.question,
    ...(run.about ? { selection: run.about.text } : {}),
    answer: ev.type === "done" ? ev.answer : run.text,
    citations: ev.type === "done" ? ev.citations || [] : [],
    overviews: ev.type === "done" ? ev.overviews || [] : [],
    shares: ev.type === "done" ? ev.shares || [] : [],
    state,
    meta: turn.querySelector(".meta-text")?.textContent || "",
    ...(state === "error" ? { error: turn.querySelector(".turn-error p")?.textContent || ev.message || "" } : {}),
  });
  await saveThread(saved);
}

// A saved thread shown again: its turns as they were, its tabs as they are now.
function restoredThread(record, tabIds) {
  const ids = new Map(record.tabs.map((t, i) => [t.tabId, tabIds[i]])); // saved tab id -> its tab now
  const now = (id) => ids.get(Number(id)) ?? null;
  const el = document.createElement("section");
  el.className = "thread";
  const open = tabIds.length > 0 && tabIds.every((id) => id != null);
  const key = open ? [...tabIds].sort((a, b) => a - b).join(",") : `saved:${record.id}`;
  const labels = new Map(record.labels.map(([label, id]) => [label, now(id)]).filter(([, id]) => id != null));
  const thread = { key, conversation: record.id, tabIds: open ? tabIds : null, labels, el, turns: 0, saved: record, restored: true, tabIdsNow: tabIds, idsNow: ids };
  for (const t of record.turns) {
    const turn = addTurn(thread, t.question);
    if (t.selection) addSelectionQuote(turn, { text: t.selection, tabId: now(record.tabs[0]?.tabId) });
    // Its sources point at the tabs as they are now (a closed one's chip says so when clicked).
    const citations = (t.citations || []).map((c) => ({ ...c, tab_id: String(now(c.tab_id) ?? -1) }));
    const overviews = (t.overviews || []).map((o) => ({ ...o, tab_id: String(now(o.tab_id) ?? -1) }));
    const shares = (t.shares || []).map((o) => ({ ...o, tab_id: String(now(o.tab_id) ?? -1) }));
    if (t.answer) renderAnswer(turn, t.answer, thread, t.state === "done" ? citations : null);
    if (t.state === "done") {
      renderSources(turn, citations, thread, overviews, shares);
      addCopy(turn, t.answer);
    }
    if (t.error) showTurnError(turn, { message: t.error });
    if (t.state === "stopped") setTurnStatus(turn, "Stopped.");
    const meta = document.createElement("span");
    meta.className = "meta-text";
    meta.textContent = t.meta || "";
    turn.querySelector(".meta").prepend(meta);
    turn.dataset.state = t.state;
  }
  return thread;
}

async function openTabs() {
  const tabs = await chrome.tabs.query({});
  return new Map(tabs.map((t) => [t.id, { url: t.url || t.pendingUrl || "", title: t.title || "" }]));
}

const savedThreads = new Map(); // record id -> its thread, as restored (or kept) in this panel

async function restoreThreads() {
  const records = await loadThreads();
  const now = await openTabs();
  for (const record of records) { // oldest first: a newer thread of the same tabs wins
    const { tabIds } = tabsSince(record, now);
    const thread = restoredThread(record, tabIds);
    savedThreads.set(record.id, thread);
    if (!thread.key.startsWith("saved:")) threads.set(thread.key, thread);
  }
  if (!current) showThread(threadFor(selectionKey()));
}

// The line at the top of a restored thread saying what became of its tabs.
async function sayWhatChanged(thread) {
  thread.checked = true;
  const now = await openTabs();
  const open = thread.tabIdsNow.filter((id) => id != null);
  const prints = open.length ? new Map(Object.entries(await request({ type: "fingerprints", tabIds: open })).map(([k, v]) => [Number(k), v])) : new Map();
  const { changes } = tabsSince(thread.saved, now, prints);
  if (!changes.length) return;
  const p = document.createElement("p");
  p.className = "thread-changes";
  p.setAttribute("role", "note");
  p.textContent = `Since this conversation: ${changes.join("; ")}.`;
  thread.el.prepend(p);
}

function showHistory() {
  const records = [...savedThreads.values()].map((t) => t.saved).sort((a, b) => b.updated - a.updated);
  els.historyList.replaceChildren(
    ...records.map((r) => {
      const li = document.createElement("li");
      const button = document.createElement("button");
      button.type = "button";
      button.dataset.thread = r.id;
      const q = document.createElement("span");
      q.className = "history-question";
      q.textContent = clip(r.turns[0]?.question || "", 90);
      const where = document.createElement("span");
      where.className = "history-tabs";
      const when = r.updated ? new Date(r.updated).toLocaleString([], { dateStyle: "medium", timeStyle: "short" }) : "";
      where.textContent = `${r.tabs.map((t) => clip(t.title || t.url, 40)).join(" · ")}${when ? ` — ${when}` : ""}`;
      button.append(q, where);
      button.addEventListener("click", () => openSaved(r.id));
      li.append(button);
      return li;
    }),
  );
  if (!records.length) {
    const li = document.createElement("li");
    li.className = "empty";
    li.textContent = "No saved conversations.";
    els.historyList.append(li);
  }
  els.historyClear.disabled = !records.length;
  els.history.showModal();
}

function openSaved(id) {
  const thread = savedThreads.get(id);
  els.history.close();
  if (!thread || current) return;
  if (thread.tabIds) {
    // Its tabs are all open: tick them; the thread is theirs, and goes on.
    checked.clear();
    thread.tabIds.forEach((t) => checked.add(t));
    threads.set(thread.key, thread);
    renderTabs().catch(console.error);
  } else {
    showThread(thread); // some of its tabs are gone: shown as it was; a question goes to the ticked tabs
  }
}

async function clearHistory() {
  await clearThreads();
  savedThreads.clear();
  threads.clear();
  els.history.close();
  if (!current) showThread(threadFor(selectionKey()));
}

els.historyButton.addEventListener("click", showHistory);
els.historyClose.addEventListener("click", () => els.history.close());
els.historyClear.addEventListener("click", () => clearHistory().catch(console.error));

function showTurnError(turn, ev) {
  const box = document.createElement("div");
  box.className = "turn-error";
  box.setAttribute("role", "alert");
  const p = document.createElement("p");
  p.textContent = ADVICE[ev.code] || ev.message || "Something went wrong.";
  box.append(p);
  if (SETTINGS_CODES.has(ev.code)) {
    const open = document.createElement("button");
    open.type = "button";
    open.textContent = "Open Settings";
    open.addEventListener("click", openSettings);
    box.append(open);
  }
  if (ADVICE[ev.code] && ev.message) {
    const details = document.createElement("details");
    const summary = document.createElement("summary");
    summary.textContent = "Details";
    const text = document.createElement("p");
    text.textContent = ev.message;
    details.append(summary, text);
    box.append(details);
  }
  turn.querySelector(".meta").before(box);
}

// A done event's passages ([1.4]), numbered as the answer first cites them: block -> {tabId, title, quote, url, n}.
function passagesOf(citations) {
  const out = new Map();
  for (const c of citations || []) {
    if (!c.block || !c.quote || out.has(c.block)) continue;
    out.set(c.block, { tabId: Number(c.tab_id), title: c.title || tabInfo(c.tab_id).title, quote: c.quote, url: c.url, n: out.size + 1 });
  }
  return out;
}

// How a tab given as an overview is said, from the done event's typed fields (as the CLI says it).
function overviewInWords(o) {
  const what = o.scope === "part" ? "overview of the parts asked about" : "overview of the whole page";
  if (!(o.parts > 1)) return what;
  return `${what}: ${o.parts_shown >= o.parts ? `all ${o.parts} parts` : `${o.parts_shown} of ${o.parts} parts`}`;
}

// A source tab on a line of its own: its chip, and a tag saying what the model was given of it.
function taggedSource(tabId, title, url, lineClass, tagClass, words, why) {
  const line = document.createElement("span");
  line.className = lineClass;
  line.dataset.tabId = String(tabId);
  const tag = document.createElement("span");
  tag.className = tagClass;
  tag.textContent = words;
  tag.title = why;
  line.append(citationChip({ tabId: Number(tabId), title: title || tabInfo(tabId).title, url }), tag);
  return line;
}

// A tab the model was given an overview of.
function overviewSource(o) {
  return taggedSource(o.tab_id, o.title, o.url, "source-overview", "overview-tag", overviewInWords(o),
    "The answer was drawn from an overview of the page (each part's opening, in page order), not from all of its text.");
}

// How much of a tab's text the model was given, from the done event's counts (as the CLI says it).
function shareInWords(s) {
  if (s.page_tokens <= s.tokens) return "all of its text";
  if (s.tokens <= 0) return "title only";
  const pct = (100 * s.tokens) / s.page_tokens;
  return pct < 1 ? "under 1% of its text" : `${Math.min(Math.round(pct), 99)}% of its text`;
}

// A cited tab the model was given part of.
function shareSource(s) {
  return taggedSource(s.tab_id, s.title, s.url, "source-share", "share-tag", shareInWords(s), s.tokens > 0
    ? "The page was longer than its share of the model's budget: the model was given the parts most related to the question."
    : "The page's share of the model's budget left room for its title only.");
}

function renderSources(turn, citations, thread, overviews = [], shares = []) {
  const box = turn.querySelector(".sources");
  if (!citations.length) return;
  const label = document.createElement("span");
  label.className = "sources-label";
  label.textContent = "Sources";
  const quoted = [...passagesOf(citations).values()];
  // A tab given as an overview is said so where the answer cites it (the tab or passages of it): one it
  // does not cite is no source.
  const cited = new Set(citations.map((c) => Number(c.tab_id)));
  overviews = overviews.filter((o) => cited.has(Number(o.tab_id)));
  const overviewed = new Set(overviews.map((o) => Number(o.tab_id)));
  // A cited tab given part of its text (not as an overview, which says so itself): how much, on its own line.
  shares = shares.filter((s) => cited.has(Number(s.tab_id)) && !overviewed.has(Number(s.tab_id)) && s.tokens < s.page_tokens);
  const shared = new Set(shares.map((s) => Number(s.tab_id)));
  // A tab whose passages are listed needs no chip of its own here (the answer's text keeps its [Tab N] chip),
  // nor one given as an overview: its line has the chip.
  const whole = citations.filter(
    (c) =>
      !c.block &&
      !quoted.some((p) => p.tabId === Number(c.tab_id)) &&
      !overviewed.has(Number(c.tab_id)) &&
      !shared.has(Number(c.tab_id)),
  );
  const passages = quoted.map((p) => {
    const li = document.createElement("li");
    const button = passageChip(p);
    button.className = "passage-source";
    button.replaceChildren();
    const n = document.createElement("span");
    n.className = "n";
    n.textContent = String(p.n);
    const title = document.createElement("span");
    title.className = "source-title";
    title.textContent = p.title || p.url;
    const quote = document.createElement("span");
    quote.className = "source-quote";
    quote.textContent = `“${clip(p.quote, 280)}”`;
    button.append(n, title, quote);
    li.append(button);
    return li;
  });
  const list = document.createElement("ol");
  list.className = "passages";
  list.append(...passages);
  box.replaceChildren(
    label,
    ...whole.map((c) => citationChip({ tabId: Number(c.tab_id), title: c.title || tabInfo(c.tab_id).title, url: c.url })),
    ...overviews.map(overviewSource),
    ...shares.map(shareSource),
    ...(passages.length ? [list] : []),
  );
  box.hidden = false;
}

function renderMeta(turn, ev, run) {
  const parts = [];
  if (ev.model) parts.push(modelInWords(ev.model));
  if (ev.usage && (ev.usage.input_tokens || ev.usage.output_tokens)) {
    const counted = ev.usage.counted ? " (counted)" : "";
    parts.push(`${ev.usage.input_tokens.toLocaleString()} in / ${ev.usage.output_tokens.toLocaleString()} out tokens${counted}`);
  }
  const ms = ev.timings?.total_ms || performance.now() - run.started;
  parts.push(ms < 1000 ? `${Math.round(ms)} ms` : `${(ms / 1000).toFixed(1)} s`);
  if (ev.tool_calls) parts.push(`looked at the page ${ev.tool_calls} time${ev.tool_calls > 1 ? "s" : ""}`);
  if (ev.cached) parts.push("from memory");
  if (ev.stop_reason === "max_turns") parts.push("gave up after the most steps allowed");
  if (ev.stop_reason === "input_budget") parts.push("stopped at its token budget");
  if (ev.stop_reason === "window") parts.push("stopped: the model's window was full");
  if (ev.truncated) parts.push("cut at its length limit");
  const text = document.createElement("span");
  text.className = "meta-text";
  text.textContent = parts.join(" · ");
  turn.querySelector(".meta").replaceChildren(text);
}

function addCopy(turn, answer) {
  const button = document.createElement("button");
  button.type = "button";
  button.className = "copy";
  button.textContent = "Copy";
  button.title = "Copy the answer (markdown)";
  button.addEventListener("click", async () => {
    try {
      await navigator.clipboard.writeText(answer);
      button.textContent = "Copied";
    } catch {
      button.textContent = "Could not copy";
    }
    setTimeout(() => (button.textContent = "Copy"), 1500);
  });
  turn.querySelector(".meta").append(button);
}

// Chips (in answers and sources) focus the tab they cite; a passage's also
// scrolls the tab to its words and highlights them (the worker does it).
const shownPassages = new Map(); // request id -> the chip clicked
els.threadBox.addEventListener("click", (e) => {
  const chip = e.target.closest?.(".chip, .passage-source");
  if (!chip) return;
  const tabId = Number(chip.dataset.tabId);
  if (chip.dataset.quote) {
    const id = crypto.randomUUID();
    shownPassages.set(id, chip);
    chip.dataset.shown = "pending";
    send({ type: "show_passage", id, tabId, quote: chip.dataset.quote });
    return;
  }
  chrome.tabs
    .update(tabId, { active: true })
    .then((tab) => chrome.windows.update(tab.windowId, { focused: true }))
    .catch(() => (chip.title = "That tab is closed."));
});

function passageShown(msg) {
  const chip = shownPassages.get(msg.id);
  shownPassages.delete(msg.id);
  if (!chip) return;
  chip.dataset.shown = msg.result; // found | missing | closed
  if (msg.result === "closed") chip.title = "That tab is closed.";
  if (msg.result === "missing") chip.title = `${chip.title.split("\n— ")[0]}\n— no longer on the page (it changed since).`;
}

// ---------------------------------------------------------------- UI state

function setRunning(running) {
  els.ask.disabled = running;
  els.stop.hidden = !running;
  els.newButton.disabled = running;
  for (const button of document.querySelectorAll(".suggestion")) button.disabled = running;
  if (running) {
    document.body.dataset.state = "running";
    els.question.value = "";
  }
}

function setTurnStatus(turn, text) {
  turn.querySelector(".turn-status").textContent = text;
}

function showError(message, code) {
  els.errorText.textContent = ADVICE[code] || message;
  els.error.dataset.code = code || "";
  els.retry.hidden = !retryable(code);
  els.error.hidden = false;
}

function hideError() {
  els.error.hidden = true;
  els.error.dataset.code = "";
  els.errorText.textContent = "";
}

els.form.addEventListener("submit", (e) => {
  e.preventDefault();
  const question = els.question.value;
  ask(question).catch((err) => {
    if (err.message !== "no tabs selected" && err.message !== "no host") showError(err.message, "input");
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
  newConversation,
  openSettings,
  saveSettings: (values) => saveSettings(values),
  settings: () => hostSettings,
  selectedTabIds: () => [...checked],
  hostState: () => ({ ...hostState }),
  refreshTabs: () => renderTabs(),
  refreshSelection: () => refreshSelection().then((s) => s && { ...s }),
  savedThreads: () => loadThreads(),
  saveThread: (record) => saveThread(record).then((list) => list.length),
  clearHistory: () => clearHistory(),
};

connect();
renderTabs()
  .catch((e) => showError(`Could not list tabs: ${e.message}`, "tabs"))
  .then(() => restoreThreads())
  .catch((e) => console.warn("chatagent: could not restore the saved threads", e));
els.question.focus();
