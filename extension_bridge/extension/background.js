// chatagent service worker: owns the one native-messaging port to the local
// host, turns side-panel questions into `ask` frames, runs the host's
// `tool_request`s (snapshot / scroll / screenshot) in the chosen tabs, and
// forwards the agent's events back to the panel that asked.
// Protocol: extension_bridge/PROTOCOL.md.

const HOST = "com.chatagent.bridge";
const PROTOCOL_VERSION = 1;
const MAX_HTML_BYTES = 8 * 1024 * 1024; // per tab; the host refuses more
const MAX_TEXT_CHARS = 4 * 1024 * 1024 - 1024;
const MAX_ASK_BYTES = 28 * 1024 * 1024; // host refuses frames over 32 MiB; keep room for JSON escaping
const MAX_VISIBLE_TEXT = 20000;
const BACKOFF_MIN_MS = 1000;
const BACKOFF_MAX_MS = 60000;
// A tool still running after this (a page frozen by a dialog, say) stops
// holding up its tab's queue; the host gave up on it at its own timeout (20 s).
const TAB_JOB_MAX_MS = 30000;
// Reading a tab for a question (the ask's own snapshot, before the host hears
// of it): a page whose main thread is stuck never answers, so after this the
// tab is skipped with a note and the question goes on with the others.
const READ_TAB_MAX_MS = 10000;

// ---------------------------------------------------------------- state

let port = null; // the native port, shared by every ask
let host = { state: "idle", code: null, message: "" };
// The host's last message, when it was an error about no request in
// particular: why it is about to exit (a broken settings file, a refused
// caller). Shown as the host's state when it then disconnects.
let lastWord = null;
let backoffMs = BACKOFF_MIN_MS;
let reconnectTimer = null;
const chunks = new Map(); // chunk id -> { parts: string[] }
const asks = new Map(); // request id -> { panel: Port, sent: bool (false while its tabs are read) }
const settingsRequests = new Map(); // request id -> the panel Port that asked
const panels = new Set();
const tabQueues = new Map(); // tab id -> promise that settles when the tab's last queued job has

chrome.sidePanel?.setPanelBehavior?.({ openPanelOnActionClick: true }).catch((e) =>
  console.warn("chatagent: setPanelBehavior failed", e),
);

// ---------------------------------------------------------------- host port

function explainHostError(raw) {
  const msg = raw || "The native host disconnected.";
  if (/not found/i.test(msg)) {
    return {
      code: "host_not_found",
      message:
        "The chatagent host is not installed for this browser. In a terminal, run `chatagent bridge install`, " +
        "then press Retry. If it finds no browser, name yours: `chatagent bridge install chrome` (or chromium, edge, brave).",
    };
  }
  if (/forbidden/i.test(msg)) {
    return {
      code: "host_forbidden",
      message:
        "The installed chatagent host does not allow this extension's ID. Run `chatagent bridge install` " +
        "again, then press Retry.",
    };
  }
  if (/exited/i.test(msg)) {
    return {
      code: "host_exited",
      message:
        "The chatagent host stopped unexpectedly (it may have crashed at start-up: check that " +
        "`chatagent` runs in a terminal). Press Retry to start it again.",
    };
  }
  return { code: "host_disconnected", message: `Lost the connection to the chatagent host: ${msg}` };
}

function setHost(state, message = "", code = null) {
  host = { state, code, message };
  broadcast({ type: "host", ...host });
}

function connectHost() {
  if (port) return port;
  clearTimeout(reconnectTimer);
  reconnectTimer = null;
  let p;
  try {
    p = chrome.runtime.connectNative(HOST);
  } catch (e) {
    const err = explainHostError(String(e?.message || e));
    setHost("error", err.message, err.code);
    scheduleReconnect();
    return null;
  }
  port = p;
  lastWord = null;
  setHost("connecting", "Starting the chatagent host…");
  p.onMessage.addListener((frame) => {
    try {
      onHostFrame(frame);
    } catch (e) {
      console.error("chatagent: bad frame from host", e, frame);
    }
  });
  p.onDisconnect.addListener(() => {
    // lastError must be read here, or Chrome logs it as unchecked.
    const exited = explainHostError(chrome.runtime.lastError?.message);
    if (port !== p) return;
    const err = lastWord ?? exited; // the host's own reason beats "it exited"
    lastWord = null;
    port = null;
    chunks.clear();
    setHost("error", err.message, err.code);
    // A question it was answering: the host ran, so not a start-up crash, and
    // the extension starts it again by itself (a panel is open): no Retry to press.
    const lost =
      err.code === "host_exited"
        ? { code: err.code, message: "The chatagent host stopped while answering; ask again." }
        : err;
    for (const [id, a] of asks) {
      if (!a.sent) continue; // still reading its tabs: it goes to the next host
      asks.delete(id);
      post(a.panel, { type: "error", id, code: lost.code, message: lost.message });
    }
    scheduleReconnect();
  });
  p.postMessage({ type: "ping", version: PROTOCOL_VERSION });
  return p;
}

function scheduleReconnect() {
  // Only worth a process while someone is looking; a panel opening reconnects anyway.
  if (reconnectTimer || panels.size === 0) return;
  const delay = backoffMs;
  backoffMs = Math.min(backoffMs * 2, BACKOFF_MAX_MS);
  reconnectTimer = setTimeout(() => {
    reconnectTimer = null;
    if (!port && panels.size > 0) connectHost();
  }, delay);
}

function sendToHost(msg) {
  const p = connectHost();
  if (!p) throw new Error(host.message || "The chatagent host is not available.");
  p.postMessage(msg);
}

// ---------------------------------------------------------------- host → extension

function onHostFrame(frame) {
  if (frame?.type === "chunk") {
    // A message over Chrome's 1 MiB limit, split by the host: concatenate the
    // `data` of one chunk id in seq order and parse the whole.
    const key = String(frame.chunk);
    const entry = chunks.get(key) ?? { parts: [] };
    if (frame.seq !== entry.parts.length) {
      chunks.delete(key);
      console.error("chatagent: chunk out of order", key, frame.seq);
      return;
    }
    entry.parts.push(frame.data);
    chunks.set(key, entry);
    if (!frame.final) return;
    chunks.delete(key);
    onHostMessage(JSON.parse(entry.parts.join("")));
    return;
  }
  onHostMessage(frame);
}

function onHostMessage(msg) {
  lastWord = null;
  switch (msg.type) {
    case "pong":
      backoffMs = BACKOFF_MIN_MS;
      if (msg.version !== PROTOCOL_VERSION) {
        setHost(
          "error",
          `The chatagent host speaks protocol v${msg.version}, this extension v${PROTOCOL_VERSION}: ` +
            "update both to the same release.",
          "version_mismatch",
        );
      } else {
        setHost("ready", "Connected to chatagent.");
      }
      break;
    case "event": {
      const a = asks.get(msg.id);
      if (!a) return; // cancelled or panel closed
      post(a.panel, { type: "event", id: msg.id, event: msg.event, tabs: msg.tabs });
      if (msg.event?.type === "done" || msg.event?.type === "error") asks.delete(msg.id);
      break;
    }
    case "tool_request": {
      onTabQueue(msg.tabId, () => runTool(msg)).then(
        (result) => replyTool(msg, { ok: true, ...result }),
        (e) => replyTool(msg, { ok: false, error: friendlyScriptError(e) }),
      );
      break;
    }
    case "settings": {
      const panel = settingsRequests.get(msg.id);
      settingsRequests.delete(msg.id);
      if (panel) post(panel, msg);
      else broadcast(msg); // saved from another panel: every panel shows the model that now answers
      break;
    }
    case "model_checked": {
      const panel = settingsRequests.get(msg.id);
      settingsRequests.delete(msg.id);
      if (panel) post(panel, msg);
      break;
    }
    case "error": {
      const waiting = msg.id != null ? settingsRequests.get(msg.id) : null;
      if (waiting) {
        settingsRequests.delete(msg.id);
        post(waiting, { type: "error", id: msg.id, code: msg.code, message: msg.message });
        break;
      }
      const a = msg.id != null ? asks.get(msg.id) : null;
      if (a) {
        post(a.panel, { type: "error", id: msg.id, code: msg.code, message: msg.message });
        asks.delete(msg.id);
      } else {
        console.warn("chatagent host error", msg);
        if (msg.id == null) lastWord = { code: msg.code, message: msg.message };
        broadcast({ type: "host_error", code: msg.code, message: msg.message });
      }
      break;
    }
    default:
      console.warn("chatagent: unknown message from host", msg.type);
  }
}

function replyTool(req, result) {
  if (!port) return; // host gone: nobody waits any more
  const msg = { type: "tool_result", id: req.id, callId: req.callId, ...result };
  if (typeof msg.text === "string" && msg.text.length > MAX_TEXT_CHARS) msg.text = msg.text.slice(0, MAX_TEXT_CHARS);
  if (typeof msg.html === "string") msg.html = truncateUtf8(msg.html, MAX_HTML_BYTES);
  port.postMessage(msg);
}

// ---------------------------------------------------------------- tools

// Jobs on one tab run one at a time, in arrival order, whichever ask, panel or
// host sent them: a scroll and a screenshot of one tab must not interleave.
function onTabQueue(tabId, job) {
  const previous = tabQueues.get(tabId) ?? Promise.resolve(); // never rejects
  const run = previous.then(() => job());
  const settled = previous.then(() => settleWithin(run, TAB_JOB_MAX_MS));
  tabQueues.set(tabId, settled);
  settled.then(() => {
    if (tabQueues.get(tabId) === settled) tabQueues.delete(tabId);
  });
  return run;
}

function settleWithin(promise, ms) {
  let timer;
  const cap = new Promise((resolve) => {
    timer = setTimeout(resolve, ms);
  });
  return Promise.race([promise.catch(() => {}), cap]).finally(() => clearTimeout(timer));
}

async function runTool(req) {
  const tabId = req.tabId;
  switch (req.name) {
    case "snapshot": {
      const snap = await snapshotTab(tabId);
      return { html: snap.html, text: snap.text, url: snap.url, title: snap.title };
    }
    case "scroll": {
      await bringToFront(tabId);
      const r = await inTab(tabId, pageScroll, [req.args?.direction || "down", req.args?.toText || null, MAX_VISIBLE_TEXT]);
      if (r.error) throw new Error(r.error);
      return {
        text: r.text,
        scroll: { scrollY: r.scrollY, pageHeight: r.pageHeight, viewportHeight: r.viewportHeight, atBottom: r.atBottom },
      };
    }
    case "screenshot":
      return { png: await captureTab(tabId) };
    default:
      throw new Error(`Unknown tool ${req.name}`);
  }
}

// Lazy loaders (IntersectionObserver, requestAnimationFrame) only run in a
// rendered tab, so a scroll brings its tab to the front and leaves it there:
// the person sees the part of the page the agent is reading.
async function bringToFront(tabId) {
  const tab = await chrome.tabs.get(tabId);
  if (tab.active) return;
  await chrome.tabs.update(tabId, { active: true });
  await new Promise((r) => setTimeout(r, 150));
}

async function inTab(tabId, func, args = []) {
  const [res] = await chrome.scripting.executeScript({ target: { tabId }, func, args });
  if (!res || res.result === undefined || res.result === null) throw new Error("The page returned nothing.");
  return res.result;
}

function snapshotTab(tabId) {
  return inTab(tabId, pageSnapshot);
}

// `what`: the tab in words ("“Orion 14 review”"), never Chrome's numeric id.
function friendlyScriptError(e, what = "the tab") {
  if (e?.code === "tab_pdf") {
    return `${what} is a PDF, which the side panel cannot read (chatagent ask reads PDFs by their address).`;
  }
  if (e?.code === "tab_timeout") {
    return `${what} did not respond within ${READ_TAB_MAX_MS / 1000} s (the page may be frozen or busy).`;
  }
  const m = String(e?.message || e);
  if (/No tab with id/i.test(m)) return `${what} was closed.`;
  if (/Cannot access|cannot be scripted|chrome:\/\/|extensions gallery|Missing host permission/i.test(m)) {
    return `the browser does not let extensions read ${what} (a browser page, the Web Store or a PDF).`;
  }
  return m;
}

async function tabInWords(tabId) {
  const tab = await chrome.tabs.get(tabId).catch(() => null);
  const title = tab?.title || tab?.url || "";
  return title ? `“${title.length > 60 ? `${title.slice(0, 59)}…` : title}”` : "a tab that was closed";
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function captureTab(tabId) {
  const tab = await chrome.tabs.get(tabId);
  let previous = null;
  if (!tab.active) {
    // captureVisibleTab shoots the window's active tab: switch, shoot, switch back.
    const [active] = await chrome.tabs.query({ active: true, windowId: tab.windowId });
    previous = active?.id ?? null;
    await chrome.tabs.update(tabId, { active: true });
    await sleep(350); // let the compositor paint the newly shown tab
  }
  try {
    for (let attempt = 0; ; attempt++) {
      try {
        const url = await chrome.tabs.captureVisibleTab(tab.windowId, { format: "png" });
        return url.slice(url.indexOf(",") + 1);
      } catch (e) {
        // Chrome allows ~2 captures per second; wait out the quota.
        if (attempt < 3 && /MAX_CAPTURE_VISIBLE_TAB_CALLS_PER_SECOND/.test(String(e?.message))) {
          await sleep(600);
          continue;
        }
        throw e;
      }
    }
  } finally {
    if (previous != null) chrome.tabs.update(previous, { active: true }).catch(() => {});
  }
}

// Runs in the page. Must be self-contained (it is serialised by executeScript).
function pageSnapshot() {
  return {
    html: document.documentElement ? document.documentElement.outerHTML : "",
    text: document.body ? document.body.innerText : "",
    url: location.href,
    title: document.title,
    // Chrome's PDF viewer: its outer page can be scripted, but holds none of the text.
    contentType: document.contentType,
  };
}

// Runs in the page. Scrolls by ~a viewport (or to `toText`) and returns the
// text now visible plus the scroll position.
async function pageScroll(direction, toText, maxChars) {
  const root = document.scrollingElement || document.documentElement;
  let scroller = root;
  if (root.scrollHeight <= root.clientHeight + 1) {
    // The page itself does not scroll (app layouts): use its biggest scrollable box.
    let best = null;
    let bestArea = 0;
    const all = document.body ? document.body.getElementsByTagName("*") : [];
    for (let i = 0; i < all.length && i < 20000; i++) {
      const el = all[i];
      if (el.scrollHeight <= el.clientHeight + 1) continue;
      const oy = getComputedStyle(el).overflowY;
      if (oy !== "auto" && oy !== "scroll" && oy !== "overlay") continue;
      const area = el.clientWidth * el.clientHeight;
      if (area > bestArea) {
        best = el;
        bestArea = area;
      }
    }
    if (best) scroller = best;
  }
  const viewH = scroller === root ? window.innerHeight : scroller.clientHeight;

  if (toText) {
    const needle = toText.toLowerCase();
    let target = null;
    const walker = document.createTreeWalker(document.body || document.documentElement, NodeFilter.SHOW_TEXT);
    for (let n = walker.nextNode(); n; n = walker.nextNode()) {
      if (n.nodeValue && n.nodeValue.toLowerCase().includes(needle)) {
        const el = n.parentElement;
        if (el && el.getClientRects().length) {
          target = el;
          break;
        }
      }
    }
    if (!target && typeof window.find === "function") {
      // Text split across elements ("<b>Pri</b>cing"): the browser's find handles it.
      const sel = window.getSelection();
      if (window.find(toText, false, false, true)) {
        target = sel && sel.anchorNode ? sel.anchorNode.parentElement : null;
        sel.removeAllRanges();
      }
    }
    if (!target) return { error: `Text ${JSON.stringify(toText)} was not found on the page.` };
    target.scrollIntoView({ block: "center", inline: "nearest", behavior: "instant" });
  } else {
    const step = Math.max(viewH * 0.85, 100);
    const opts = { behavior: "instant" };
    if (direction === "down") scroller.scrollBy({ top: step, ...opts });
    else if (direction === "up") scroller.scrollBy({ top: -step, ...opts });
    else if (direction === "top") scroller.scrollTo({ top: 0, ...opts });
    else if (direction === "bottom") scroller.scrollTo({ top: scroller.scrollHeight, ...opts });
  }
  // Give lazy content a moment (rAF does not run in background tabs; timers do).
  await new Promise((r) => setTimeout(r, 150));

  const vw = window.innerWidth;
  const vh = window.innerHeight;
  const lines = [];
  let line = [];
  let lastTop = null;
  let total = 0;
  const range = document.createRange();
  const walker = document.createTreeWalker(document.body || document.documentElement, NodeFilter.SHOW_TEXT, {
    acceptNode(n) {
      const p = n.parentElement;
      if (!p || !n.nodeValue || !n.nodeValue.trim()) return NodeFilter.FILTER_REJECT;
      const tag = p.tagName;
      if (tag === "SCRIPT" || tag === "STYLE" || tag === "NOSCRIPT" || tag === "TEMPLATE") return NodeFilter.FILTER_REJECT;
      return NodeFilter.FILTER_ACCEPT;
    },
  });
  for (let n = walker.nextNode(); n && total < maxChars; n = walker.nextNode()) {
    range.selectNodeContents(n);
    const rects = range.getClientRects();
    let top = null;
    for (const r of rects) {
      if (r.width > 0 && r.height > 0 && r.bottom > 0 && r.top < vh && r.right > 0 && r.left < vw) {
        top = r.top;
        break;
      }
    }
    if (top === null) continue;
    const style = getComputedStyle(n.parentElement);
    if (style.visibility === "hidden" || style.opacity === "0") continue;
    const t = n.nodeValue.replace(/\s+/g, " ").trim();
    if (lastTop !== null && Math.abs(top - lastTop) > 4 && line.length) {
      lines.push(line.join(" "));
      line = [];
    }
    line.push(t);
    lastTop = top;
    total += t.length + 1;
  }
  if (line.length) lines.push(line.join(" "));
  const scrollY = scroller === root ? window.scrollY : scroller.scrollTop;
  const pageHeight = scroller.scrollHeight;
  return {
    text: lines.join("\n").slice(0, maxChars),
    scrollY: Math.round(scrollY),
    pageHeight: Math.round(pageHeight),
    viewportHeight: Math.round(viewH),
    atBottom: scrollY + viewH >= pageHeight - 2,
  };
}

// ---------------------------------------------------------------- passages

// The passage's look in the page: a stylesheet injected by the browser (a
// page's own CSP cannot refuse it); nothing executable enters the page.
const HIGHLIGHT_CSS =
  "::highlight(chatagent-passage) { background-color: #ffd33d; color: #1f2328; }";

// A cited passage, shown: its tab in front, scrolled to the quote, which is highlighted.
async function showPassage(tabId, quote) {
  let tab;
  try {
    tab = await chrome.tabs.update(tabId, { active: true });
    await chrome.windows.update(tab.windowId, { focused: true });
  } catch {
    return "closed";
  }
  return onTabQueue(tabId, async () => {
    await chrome.scripting.insertCSS({ target: { tabId }, css: HIGHLIGHT_CSS }).catch(() => {});
    const r = await inTab(tabId, pageShowPassage, [String(quote).slice(0, MAX_QUOTE_CHARS)]);
    return r.found ? "found" : "missing";
  }).catch(() => "missing");
}

const MAX_QUOTE_CHARS = 5000;

// Runs in the page. Finds `quote` in the page's text whatever its elements
// and spacing (letters and digits compared, case aside), highlights it with
// the CSS Custom Highlight API (the page's DOM is left as it is) and scrolls
// it into view. Self-contained: serialised by executeScript.
function pageShowPassage(quote) {
  const RUN = /[\p{L}\p{N}]+/gu;
  // `text`'s letters and digits, lower-cased; `from` gets the index in `text` each came from.
  const letters = (text, from) => {
    const out = [];
    for (const m of text.matchAll(RUN)) {
      const low = m[0].toLowerCase();
      if (low.length === m[0].length) {
        out.push(low);
        for (let k = 0; k < low.length; k++) from?.push(m.index + k);
        continue;
      }
      for (let k = 0; k < m[0].length; k++) { // rare: a letter whose lower case is longer ("İ")
        const c = m[0][k].toLowerCase();
        out.push(c);
        for (let u = 0; u < c.length; u++) from?.push(m.index + k);
      }
    }
    return out.join("");
  };
  const needle = letters(quote);
  if (!needle) return { found: false };
  // The page's text nodes, end to end, then its letters and digits, each with where it sits.
  const nodes = [];
  const starts = [];
  const texts = [];
  let length_ = 0;
  const walker = document.createTreeWalker(document.body || document.documentElement, NodeFilter.SHOW_TEXT, {
    acceptNode(n) {
      const tag = n.parentElement?.tagName;
      return tag === "SCRIPT" || tag === "STYLE" || tag === "NOSCRIPT" || tag === "TEMPLATE"
        ? NodeFilter.FILTER_REJECT
        : NodeFilter.FILTER_ACCEPT;
    },
  });
  for (let n = walker.nextNode(); n && length_ < 1e7; n = walker.nextNode()) {
    nodes.push(n);
    starts.push(length_);
    texts.push(n.nodeValue);
    length_ += n.nodeValue.length;
  }
  const from = [];
  const hay = letters(texts.join(""), from);
  const position = (k) => {
    const r = from[k];
    let lo = 0;
    let hi = starts.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (starts[mid] <= r) lo = mid;
      else hi = mid - 1;
    }
    return [nodes[lo], r - starts[lo]];
  };
  // The whole quote; failing that (the page changed a little), its start or its end.
  let at = hay.indexOf(needle);
  let length = needle.length;
  if (at < 0 && needle.length > 60) {
    for (const part of [needle.slice(0, 60), needle.slice(-60)]) {
      at = hay.indexOf(part);
      if (at >= 0) {
        length = part.length;
        break;
      }
    }
  }
  if (at < 0) return { found: false };
  const range = document.createRange();
  const [startNode, startOffset] = position(at);
  range.setStart(startNode, startOffset);
  const [endNode, endOffset] = position(at + length - 1);
  // With the punctuation that ends it ("weekdays." and not "weekdays").
  const last = endNode.nodeValue;
  let stop = endOffset + 1;
  while (stop < last.length && stop - endOffset <= 3 && /[.!?;:,)\]”’"'»…]/.test(last[stop])) stop++;
  range.setEnd(endNode, stop);
  if (typeof Highlight === "function" && CSS.highlights) {
    CSS.highlights.set("chatagent-passage", new Highlight(range));
  }
  // Its element centred (inner scrolling boxes too); a tall element, the quote's first line a third down.
  const target = startNode.parentElement;
  if (target && target.getBoundingClientRect().height <= innerHeight * 0.8) {
    target.scrollIntoView({ block: "center", behavior: "instant" });
  } else {
    target?.scrollIntoView({ block: "start", behavior: "instant" });
    window.scrollBy({ top: range.getBoundingClientRect().top - innerHeight / 3, behavior: "instant" });
  }
  return { found: true, text: range.toString() };
}

// ---------------------------------------------------------------- page fingerprints

// A page's text, summed up (FNV-1a, 32 bits): a saved thread can tell whether
// its tabs' pages changed since, without keeping their text.
function fingerprint(text) {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return (h >>> 0).toString(16).padStart(8, "0");
}

// Runs in the page.
function pageText() {
  return document.body ? document.body.innerText : "";
}

async function fingerprints(tabIds) {
  const out = {};
  for (const tabId of tabIds) {
    try {
      out[tabId] = fingerprint((await inTab(tabId, pageText)).slice(0, MAX_TEXT_CHARS));
    } catch {
      // closed, or not readable: nothing to compare
    }
  }
  return out;
}

// ---------------------------------------------------------------- asks

const encoder = new TextEncoder();

function truncateUtf8(s, maxBytes) {
  if (s.length * 3 <= maxBytes) return s; // cannot be over: skip the encode
  const bytes = encoder.encode(s);
  if (bytes.length <= maxBytes) return s;
  return new TextDecoder().decode(bytes.subarray(0, maxBytes)).replace(/\uFFFD$/, "");
}

function utf8Length(s) {
  return s ? encoder.encode(s).length : 0;
}

async function collectTab(tabId) {
  const tab = await chrome.tabs.get(tabId);
  const out = { tabId, url: tab.url || tab.pendingUrl || "", title: tab.title || "" };
  const snap = await snapshotTab(tabId);
  if (snap.contentType === "application/pdf") {
    throw Object.assign(new Error("The tab is a PDF."), { code: "tab_pdf" });
  }
  out.url = snap.url || out.url;
  out.title = snap.title || out.title;
  out.html = truncateUtf8(snap.html || "", MAX_HTML_BYTES);
  out.text = (snap.text || "").slice(0, MAX_TEXT_CHARS);
  return out;
}

// Rejects with code "tab_timeout" if `promise` has not settled within `ms`.
function within(promise, ms) {
  let timer;
  const late = new Promise((_, reject) => {
    timer = setTimeout(() => reject(Object.assign(new Error("The tab did not respond."), { code: "tab_timeout" })), ms);
  });
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}

async function startAsk(panel, req) {
  if (host.state === "error") {
    // Reading the tabs first would only add notes about them to an answer that cannot come.
    post(panel, { type: "error", id: req.id, code: host.code || "host_unavailable", message: host.message });
    return;
  }
  // Known from the start, so a Stop while the tabs are read ends it at once.
  const ask = { panel, sent: false };
  asks.set(req.id, ask);
  const live = () => asks.get(req.id) === ask; // not stopped, its panel still open
  const notes = [];
  const tabs = [];
  const read = (id) => {
    // A stopped question reads nothing more, even once the tab's queue frees up.
    const job = onTabQueue(id, () => (live() ? collectTab(id) : Promise.reject(new Error("Stopped."))));
    return within(job, READ_TAB_MAX_MS);
  };
  const results = await Promise.allSettled(req.tabIds.map(read));
  if (!live()) return;
  for (const [i, r] of results.entries()) {
    if (r.status === "fulfilled") tabs.push(r.value);
    else notes.push({ message: friendlyScriptError(r.reason, await tabInWords(req.tabIds[i])) });
  }
  if (!live()) return;
  // What was read, for the panel's saved thread (did its pages change since?).
  post(panel, {
    type: "tabs_read",
    id: req.id,
    tabs: tabs.map((t) => ({ tabId: t.tabId, url: t.url, title: t.title, fingerprint: fingerprint(t.text || "") })),
  });
  for (const n of notes) {
    post(panel, { type: "event", id: req.id, event: { type: "note", text: `Skipped: ${n.message}` } });
  }
  if (!tabs.length) {
    asks.delete(req.id);
    post(panel, { type: "error", id: req.id, code: "no_readable_tabs", message: "None of the chosen tabs can be read." });
    return;
  }
  // Keep the ask frame under the host's cap: drop the biggest pages' html;
  // the host then fetches each with a `snapshot` tool call of its own.
  let size = tabs.reduce((n, t) => n + utf8Length(t.html) + utf8Length(t.text) * 1.2, 0);
  for (const t of [...tabs].sort((a, b) => b.html.length - a.html.length)) {
    if (size <= MAX_ASK_BYTES) break;
    size -= utf8Length(t.html) + utf8Length(t.text) * 1.2;
    t.html = "";
    delete t.text;
  }
  const msg = { type: "ask", id: req.id, question: req.question, tabs };
  if (req.model) msg.model = req.model;
  if (req.noCache) msg.noCache = true;
  if (req.conversation) msg.conversation = req.conversation;
  if (Array.isArray(req.earlier) && req.earlier.length) msg.earlier = req.earlier.slice(-8);
  const sel = req.selection;
  // Only about a tab that could be read (the host refuses a selection in a tab it was not sent).
  if (sel && typeof sel.text === "string" && sel.text.trim() && tabs.some((t) => t.tabId === sel.tabId)) {
    msg.selection = { tabId: sel.tabId, text: sel.text.slice(0, SELECTION_MAX_CHARS) };
  }
  ask.sent = true;
  try {
    sendToHost(msg);
  } catch (e) {
    asks.delete(req.id);
    post(panel, { type: "error", id: req.id, code: host.code || "host_unavailable", message: String(e.message || e) });
  }
}

// ---------------------------------------------------------------- the selection

// "Ask chatagent about the selection": the context menu's entry and the
// keyboard shortcut (manifest `commands`) open the panel and hand it the
// tab's selection, attached to the next question. A panel not open yet gets
// it when it connects.
const SELECTION_MAX_CHARS = 20000; // the host's bound (chatagent.limits.MAX_SELECTION_CHARS)
const SELECTION_WAIT_MS = 30000; // a panel that takes longer to open than this was not opened for it
let pendingSelection = null; // { tabId, text, at }

chrome.runtime.onInstalled.addListener(() => {
  chrome.contextMenus.create(
    { id: "ask-selection", title: "Ask chatagent about the selection", contexts: ["selection"] },
    () => void chrome.runtime.lastError, // already there (an update): fine
  );
});
chrome.contextMenus?.onClicked.addListener((info, tab) => {
  if (info.menuItemId === "ask-selection" && tab) askAboutSelection(tab, info.selectionText || "");
});
chrome.commands?.onCommand.addListener((command, tab) => {
  if (command === "ask-selection" && tab) askAboutSelection(tab, "");
});

// Runs in the page: the selected text, in full (the menu's copy of it is cut and flattened).
function pageSelectedText(max) {
  const s = getSelection();
  return s && !s.isCollapsed ? s.toString().slice(0, max) : "";
}

async function askAboutSelection(tab, fallback) {
  // First, while this still counts as the person's gesture: Chrome opens a panel for nothing else.
  const opening = chrome.sidePanel?.open?.({ windowId: tab.windowId })?.catch((e) => console.warn("chatagent: open panel", e));
  let text = "";
  try {
    text = await inTab(tab.id, pageSelectedText, [SELECTION_MAX_CHARS]);
  } catch {
    text = fallback; // a page the extension may not script
  }
  text = String(text || "").trim().slice(0, SELECTION_MAX_CHARS);
  await opening;
  if (!text) return;
  const msg = { type: "selection", tabId: tab.id, text };
  if (panels.size) broadcast(msg);
  else pendingSelection = { ...msg, at: Date.now() };
}
globalThis.chatagentAskAboutSelection = askAboutSelection; // for tests: the menu and the shortcut cannot be pressed headless

// ---------------------------------------------------------------- panels

function post(panel, msg) {
  try {
    panel.postMessage(msg);
  } catch (e) {
    // Panel closed meanwhile.
  }
}

function broadcast(msg) {
  for (const p of panels) post(p, msg);
}

chrome.runtime.onConnect.addListener((panel) => {
  if (panel.name !== "chatagent-panel") return;
  panels.add(panel);
  post(panel, { type: "host", ...host });
  if (pendingSelection && Date.now() - pendingSelection.at < SELECTION_WAIT_MS) {
    const { at, ...msg } = pendingSelection;
    post(panel, msg);
  }
  pendingSelection = null;
  connectHost();
  panel.onMessage.addListener((msg) => {
    if (msg.type === "ask") {
      startAsk(panel, msg).catch((e) => {
        asks.delete(msg.id);
        post(panel, { type: "error", id: msg.id, code: "internal", message: String(e?.message || e) });
      });
    } else if (msg.type === "cancel") {
      const a = asks.get(msg.id);
      if (a?.sent) {
        if (port) port.postMessage({ type: "cancel", id: msg.id });
      } else if (a) {
        // Still reading its tabs (one may never answer): the host has not heard of it, so it ends here.
        asks.delete(msg.id);
        post(panel, { type: "error", id: msg.id, code: "aborted", message: "Cancelled." });
      }
    } else if (msg.type === "settings_get" || msg.type === "settings_set" || msg.type === "model_check") {
      settingsRequests.set(msg.id, panel);
      try {
        const { type, id, values, provider } = msg;
        sendToHost({ settings_get: { type, id }, settings_set: { type, id, values }, model_check: { type, id, provider, values } }[type]);
      } catch (e) {
        settingsRequests.delete(msg.id);
        post(panel, { type: "error", id: msg.id, code: host.code || "host_unavailable", message: String(e.message || e) });
      }
    } else if (msg.type === "fingerprints") {
      const ids = (Array.isArray(msg.tabIds) ? msg.tabIds : []).filter(Number.isInteger).slice(0, 40);
      fingerprints(ids).then((prints) => post(panel, { type: "fingerprints", id: msg.id, prints }));
    } else if (msg.type === "show_passage") {
      showPassage(Number(msg.tabId), msg.quote).then((result) => post(panel, { type: "passage_shown", id: msg.id, result }));
    } else if (msg.type === "reconnect") {
      backoffMs = BACKOFF_MIN_MS;
      if (port) port.postMessage({ type: "ping", version: PROTOCOL_VERSION });
      else connectHost();
    }
  });
  panel.onDisconnect.addListener(() => {
    panels.delete(panel);
    for (const [id, p] of settingsRequests) if (p === panel) settingsRequests.delete(id);
    // A closed panel's questions have nobody to answer: stop them.
    for (const [id, a] of asks) {
      if (a.panel === panel) {
        asks.delete(id);
        if (a.sent && port) port.postMessage({ type: "cancel", id });
      }
    }
  });
});
