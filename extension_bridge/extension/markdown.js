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

// [Tab 1], [Tab 2, p. 3]: how answers cite tabs.
const CITE = /\[Tab (\d+)(?:[,;][^\]\n]{0,40})?\]/g;

export function escapeHtml(s) {
  return String(s).replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]);
}

/**
 * `text` (markdown) as a sanitised DocumentFragment. `tabFor(label)` gives
 * {tabId, title} for a cited tab label ("1"), or null; citations of known
 * tabs become chip buttons (data-tab-id) that the caller wires to focus the tab.
 */
export function renderMarkdown(text, tabFor = () => null) {
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
  chipCitations(fragment, tabFor);
  return fragment;
}

function chipCitations(root, tabFor) {
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT, {
    acceptNode: (n) => (n.parentElement?.closest("code, pre, a") ? NodeFilter.FILTER_REJECT : NodeFilter.FILTER_ACCEPT),
  });
  const nodes = [];
  for (let n = walker.nextNode(); n; n = walker.nextNode()) if (n.nodeValue.includes("[Tab ")) nodes.push(n);
  for (const node of nodes) {
    const parts = [];
    let last = 0;
    for (const m of node.nodeValue.matchAll(CITE)) {
      if (m.index < last) continue; // inside a title dropped below
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
