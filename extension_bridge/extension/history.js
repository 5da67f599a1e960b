// The panel's threads, kept in chrome.storage.local so that they outlast the
// panel and the browser: bounded in number and in bytes (the oldest go
// first), cleared by "Clear history". Nothing here is sent anywhere.
//
// A record: { id (the thread's conversation id), tabs: [{tabId, url, title,
// fingerprint}] as last read, labels: [[label, tabId]], turns: [{question,
// selection?, answer, citations, overviews?, shares?, state, meta, error?}], updated (ms) }.

const KEY = "threads";
export const MAX_THREADS = 30;
export const MAX_BYTES = 2 * 1024 * 1024; // of JSON, all threads together (storage.local allows 10 MB)
const MAX_TURN_CHARS = 60000; // an answer longer than this is kept cut (a thread of a few such still fits)

export async function loadThreads() {
  const got = await chrome.storage.local.get(KEY);
  const list = Array.isArray(got[KEY]) ? got[KEY] : [];
  return list.filter((r) => r && typeof r.id === "string" && Array.isArray(r.turns) && Array.isArray(r.tabs));
}

function bounded(record) {
  const turns = record.turns.map((t) =>
    t.answer && t.answer.length > MAX_TURN_CHARS ? { ...t, answer: `${t.answer.slice(0, MAX_TURN_CHARS)}…` } : t,
  );
  return { ...record, turns };
}

function size(list) {
  return new TextEncoder().encode(JSON.stringify(list)).length;
}

// Saves `record` as the newest thread (replacing its older self), then drops
// the oldest threads while there are too many or they take too many bytes;
// the newest alone still too big loses its first turns.
export async function saveThread(record) {
  let list = (await loadThreads()).filter((r) => r.id !== record.id);
  list.push(bounded({ ...record, updated: Date.now() }));
  while (list.length > MAX_THREADS) list.shift();
  while (list.length > 1 && size(list) > MAX_BYTES) list.shift();
  while (list[0].turns.length > 1 && size(list) > MAX_BYTES) list[0].turns.shift();
  await chrome.storage.local.set({ [KEY]: list });
  return list;
}

export async function clearThreads() {
  await chrome.storage.local.remove(KEY);
}

// What became of a thread's tabs since it was saved, in words, from what the
// panel knows cheaply: the open tabs' addresses (chrome.tabs) and a
// fingerprint of each page's text (read from the page by the worker).
// `now`: tabId -> {url, title} of the open tabs; `fingerprints`: tabId -> its page's now.
// Returns { tabIds: the saved tabs' ids now (null for a closed one), changes: [words] }.
export function tabsSince(record, now, fingerprints = new Map()) {
  const used = new Set();
  const tabIds = [];
  const changes = [];
  for (const t of record.tabs) {
    const name = `“${shortened(t.title || t.url)}”`;
    let id = now.get(t.tabId)?.url === t.url ? t.tabId : null;
    // After a browser restart the same pages come back under new ids: found by address.
    if (id == null) id = [...now].find(([tid, info]) => info.url === t.url && !used.has(tid))?.[0] ?? null;
    if (id == null && now.has(t.tabId)) {
      changes.push(`${name} now shows another page`);
    } else if (id == null) {
      changes.push(`${name} was closed`);
    } else {
      used.add(id);
      const print = fingerprints.get(id);
      if (t.fingerprint && print && print !== t.fingerprint) changes.push(`${name} has changed`);
    }
    tabIds.push(id);
  }
  return { tabIds, changes };
}

function shortened(title) {
  return title.length > 40 ? `${title.slice(0, 39)}…` : title;
}
