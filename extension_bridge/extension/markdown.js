// Answers as rendered markdown, safely. An answer is untrusted (it quotes page
// text, and a page can steer a model), so: marked renders, DOMPurify keeps only
// text formatting and http(s) links, images never load (their alt text is
// shown instead), and the panel's content-security policy forbids loading
// anything remote whatever slips through. Vendored at pinned versions: vendor/README.md.

import { Marked } from "./vendor/marked.esm.js";
import DOMPurify from "./vendor/purify.es.mjs";

const marked = new Marked({ gfm: true, breaks: false, async: false });
marked.use({
  renderer: {
    image({ text }) {
      return text ? `<em>[${escapeHtml(text)}]</em>` : "";
    },
  },
});

const PURIFY = {
  ALLOWED_TAGS: [
    "p", "br", "hr", "h1", "h2", "h3", "h4", "h5", "h6", "strong", "b", "em", "i", "del", "s", "u",
    "code", "pre", "blockquote", "ul", "ol", "li", "table", "thead", "tbody", "tr", "th", "td",
    "a", "sup", "sub", "kbd", "mark", "span",
  ],
  ALLOWED_ATTR: ["href", "title", "align", "start"],
  // Checked against ALLOWED_URI_REGEXP: every allowed attribute but these,
  // which are no URLs (a list's first number, a table column's alignment).
  ADD_URI_SAFE_ATTR: ["align", "start"],
  ALLOWED_URI_REGEXP: /^(?:https?:|mailto:)/i,
  RETURN_DOM_FRAGMENT: true,
};

// [Tab 1], [Tab 2, p. 3]: how answers cite tabs; [1.4] (tab 1, block 4),
// [1.4, 2.1] or [Tab 1.4], how they cite passages. One pattern, so a text is cut once.
const CITE = /\[Tab (\d+)(?:[,;][^\]\n]{0,40})?\]|\[((?:Tab\s*)?\d+\.\d+(?:\s*[,;]\s*(?:Tab\s*)?\d+\.\d+){0,9})\]/g;
const BLOCK = /\d+\.\d+/g;

export function escapeHtml(s) {
  return String(s).replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]);
}

/**
 * `text` (markdown) as a sanitised DocumentFragment. `tabFor(label)` gives
 * {tabId, title} for a cited tab label ("1"), or null; citations of known
 * tabs become chip buttons (data-tab-id) that the caller wires to focus the tab.
 * `passageFor(block)` gives {tabId, title, quote, url, n} for a cited passage
 * ("1.4"), null for one that names nothing (dropped from the text), or
 * undefined while the answer's citations are not known (the id stays as written).
 */
export function renderMarkdown(text, tabFor = () => null, passageFor = () => undefined) {
  const html = marked.parse(String(text ?? ""));
  const fragment = DOMPurify.sanitize(html, PURIFY);
  for (const a of fragment.querySelectorAll("a")) {
    if (!a.getAttribute("href")) {
      a.replaceWith(...a.childNodes); // a link DOMPurify disarmed (javascript:, data:): just its text
      continue;
    }
    a.target = "_blank";
    a.rel = "noopener noreferrer";
    a.title = a.href;
  }
  chipCitations(fragment, tabFor, passageFor);
  return fragment;
}

function chipCitations(root, tabFor, passageFor) {
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT, {
    acceptNode: (n) => (n.parentElement?.closest("code, pre, a") ? NodeFilter.FILTER_REJECT : NodeFilter.FILTER_ACCEPT),
  });
  const nodes = [];
  for (let n = walker.nextNode(); n; n = walker.nextNode()) if (n.nodeValue.includes("[")) nodes.push(n);
  for (const node of nodes) {
    const parts = [];
    let last = 0;
    for (const m of node.nodeValue.matchAll(CITE)) {
      if (m.index < last) continue; // inside a title dropped below
      if (m[2]) {
        const passages = m[2].match(BLOCK).map((id) => [id, passageFor(id)]);
        if (passages.some(([, p]) => p === undefined)) continue; // not known yet: as written
        // An id that names nothing is no source: gone, with the space before it.
        const before = node.nodeValue.slice(last, m.index);
        parts.push(document.createTextNode(passages.some(([, p]) => p) ? before : before.replace(/\s+$/, "")));
        for (const [id, p] of passages) if (p) parts.push(passageChip(p, id));
        last = m.index + m[0].length;
        continue;
      }
      const tab = tabFor(m[1]);
      if (!tab) continue;
      parts.push(document.createTextNode(node.nodeValue.slice(last, m.index)), citationChip(tab, m[0]));
      last = m.index + m[0].length;
      // "From [Tab 1] (Its title):" would name the tab twice: the chip says it (its tooltip, in full).
      const named = ` (${tab.title})`;
      if (tab.title && node.nodeValue.startsWith(named, last)) last += named.length;
    }
    if (!parts.length) continue;
    parts.push(document.createTextNode(node.nodeValue.slice(last)));
    node.replaceWith(...parts);
  }
}

// "Port Averly — City guide — Coastal Towns Atlas" → "Port Averly": titles lead
// with what the page is about and trail with the site's name.
function shortTitle(title) {
  const [first] = title.split(/\s+[—–|·]\s+|\s+-\s+/);
  return first.trim().length >= 3 ? first.trim() : title;
}

const QUOTE_SHOWN = 280; // characters of a quote in a tooltip or a source line

export function clip(text, n) {
  const t = String(text).replace(/\s+/g, " ").trim();
  return t.length > n ? `${t.slice(0, n - 1).trimEnd()}…` : t;
}

/** A chip for one cited passage: its source's number; hovering shows the quote, clicking shows it in its tab. */
export function passageChip(p, cited = "") {
  const chip = document.createElement("button");
  chip.type = "button";
  chip.className = "chip passage";
  chip.dataset.tabId = String(p.tabId);
  chip.dataset.quote = p.quote;
  if (cited) chip.dataset.block = cited;
  chip.textContent = String(p.n);
  const title = p.title || p.url || `Tab ${p.tabId}`;
  chip.title = `“${clip(p.quote, QUOTE_SHOWN)}”\n— ${title} (show it in the tab)`;
  chip.setAttribute("aria-label", `Source ${p.n}: ${title}`);
  return chip;
}

export function citationChip(tab, cited = "") {
  const chip = document.createElement("button");
  chip.type = "button";
  chip.className = "chip";
  chip.dataset.tabId = String(tab.tabId);
  const title = tab.title || tab.url || `Tab ${tab.tabId}`;
  const short = shortTitle(title);
  chip.textContent = short.length > 28 ? `${short.slice(0, 27)}…` : short;
  chip.title = `${cited ? `${cited}: ` : ""}${title} (go to the tab)`;
  return chip;
}
