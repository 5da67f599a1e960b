"""A tab's text across its documents: the page, the frames it shows, and the
open shadow roots of each.

`body.innerText` and `outerHTML` stop at an `<iframe>` and at a shadow root.
`SNAPSHOT_JS` reads one document: its HTML with each open shadow root written
out in a `<div>` inside its host (trafilatura drops `<template>` in its
fallbacks), and each frame element replaced by a placeholder; its rendered
text with the shadow roots' after it. `FrameReader` reads the page, then each
frame the page shows (nested ones too, within caps), and puts each frame's
body where its placeholder is, after a "Frame from ORIGIN:" line. A page
without frames costs one evaluate, as it always did.
"""

from __future__ import annotations

import asyncio
import html
import logging
import re
import secrets
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from playwright.async_api import Frame, Page

from .text_bound import TextBound

log = logging.getLogger(__name__)

# Placing a frame and reading it each give up after FRAME_TIMEOUT_S, and all
# frames together stop at FRAMES_TIMEOUT_S: a busy or dead frame (an ad's, in
# its own process) costs that much once, and the tab is read without it, well
# within the tab's own timeout.
FRAME_TIMEOUT_S = 2.0
FRAMES_TIMEOUT_S = 5.0
MAX_FRAMES = 20  # per tab, the first ones in document order, level by level
MAX_DEPTH = 3  # frames in frames in frames; deeper ones are not read
FRAME_MARK = "Frame from {origin}:"

# A tab's snapshot of one document in one evaluate: the HTML (with no frame
# and no open shadow root, exactly as `page.content()` builds it: doctype +
# documentElement.outerHTML; with `part`, the body's inner HTML), the rendered
# text and the title.
# Moving the HTML out of Chromium is most of a follow-up question's snapshot
# time (10 ms for 80 kB), so the document keeps a stamp: a MutationObserver counts
# every change the HTML or the rendered text can show (in open shadow roots
# too, once a snapshot has seen them); the viewport size (media queries) and the
# style sheets' rule counts are part of it. With the stamp of the last snapshot
# passed in, an unchanged document answers `{same: true}` and nothing is moved.
# At most `limit` characters of the text and of the HTML leave the page (`text_bound`);
# `cut` holds the whole lengths of what was cut.
# A navigation starts a new document: no observer, so a full snapshot. The state
# lives on the document (a frame's first document and the next share a window)
# under a per-tab random key that page scripts cannot guess; a new document's
# id comes from here, not from the page's (replaceable) Math.random.
# Frame elements become `<KEY:frame:N>` placeholders; N is kept on the element
# as a property under the key (an attribute would change the page's DOM), and
# `frames` lists the Ns in document order. Everything not on the way to a frame
# or a shadow host is serialised natively; only that path is written by hand.
SNAPSHOT_JS = """
([key, known, fresh, part, limit]) => {
  const d = document;
  const watched = { subtree: true, childList: true, attributes: true, characterData: true };
  let st = d[key];
  if (!st) {
    st = { id: fresh, n: 0, frames: 0 };
    st.obs = new MutationObserver((records) => { st.n += records.length; });
    st.obs.observe(d, watched);
    Object.defineProperty(d, key, { value: st, enumerable: false });
  }
  st.n += st.obs.takeRecords().length;
  // insertRule()/deleteRule() change what renders without touching the DOM.
  let rules = 0;
  for (const sheet of d.styleSheets) { try { rules += sheet.cssRules.length; } catch (e) { rules += 1; } }
  const stamp = `${st.id}:${st.n}:${window.innerWidth}x${window.innerHeight}:${rules}`;
  if (known === stamp) return { same: true, stamp };
  // Open shadow roots (nested too) and frames: outerHTML and innerText show neither.
  const hosts = [], frames = [];
  const scan = (root) => {
    const walker = d.createTreeWalker(root, NodeFilter.SHOW_ELEMENT);
    for (let el = walker.nextNode(); el; el = walker.nextNode()) {
      if (el.shadowRoot) { hosts.push(el); scan(el.shadowRoot); }
      else if (el.localName === 'iframe' || el.localName === 'frame') frames.push(el);
    }
  };
  if (d.documentElement) scan(d.documentElement);
  for (const host of hosts) st.obs.observe(host.shadowRoot, watched);  // the stamp sees inside them from now on
  const top = part ? d.body || d.documentElement : d.documentElement;
  const order = [];
  let html = !part && d.doctype ? new XMLSerializer().serializeToString(d.doctype) : '';
  if (top && !hosts.length && !frames.length) {
    html += part ? top.innerHTML : top.outerHTML;
  } else if (top) {
    const onPath = new Set();
    for (const el of hosts.concat(frames)) {
      for (let n = el; n && !onPath.has(n); n = n.parentNode || n.host) onPath.add(n);
    }
    const esc = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', '\\u00a0': '&nbsp;' };
    const raw = /^(style|script|xmp|iframe|noembed|noframes|plaintext|noscript)$/;
    const put = (node) => {
      if (html.length > limit) return;  // cut below anyway: build no more than that
      if (node.nodeType === 3) {
        const parent = node.parentNode.localName || '';
        html += raw.test(parent) ? node.data : node.data.replace(/[&<>\\u00a0]/g, (c) => esc[c]);
        return;
      }
      if (node.nodeType === 8) html += `<!--${node.data}-->`;
      if (node.nodeType !== 1) return;
      if (!onPath.has(node)) { html += node.outerHTML; return; }
      if (node.localName === 'iframe' || node.localName === 'frame') {
        if (typeof node[key] !== 'number') {
          // A frozen element takes no number: its frame is not placed, so not read.
          try { Object.defineProperty(node, key, { value: ++st.frames }); } catch (e) { return; }
        }
        order.push(node[key]);
        html += `<${key}:frame:${node[key]}>`;
        return;
      }
      const tag = node.localName;
      html += '<' + tag;
      for (const a of node.attributes) html += ` ${a.name}="${a.value.replace(/[&"<>\\u00a0]/g, (c) => esc[c])}"`;
      html += '>';
      if (node.shadowRoot) { html += '<div>'; node.shadowRoot.childNodes.forEach(put); html += '</div>'; }
      node.childNodes.forEach(put);
      html += `</${tag}>`;
    };
    if (part) top.childNodes.forEach(put); else put(top);
  }
  let text = d.body ? d.body.innerText : (d.documentElement ? d.documentElement.innerText || '' : '');
  // innerText leaves shadow roots out: the rendered text of each follows the page's.
  // A child that is not rendered answers innerText with all its text, hidden or not;
  // display:contents (a <slot>, say) renders its children without a box of its own.
  for (const host of hosts) {
    if (text.length > limit) break;
    if (!host.checkVisibility()) continue;
    let own = '';
    for (const c of host.shadowRoot.childNodes) {
      if (c.nodeType === 3) own += c.data.replace(/\\s+/g, ' ');
      else if (c.nodeType === 1 && (c.checkVisibility() || getComputedStyle(c).display === 'contents')) {
        own += '\\n' + c.innerText + '\\n';
      }
    }
    own = own.replace(/ *\\n */g, '\\n').replace(/\\n{3,}/g, '\\n\\n').trim();
    if (own) text += '\\n\\n' + own;
  }
  // A frame's document may be its server's error page (a 404, a page refused): not content.
  const nav = part ? performance.getEntriesByType('navigation')[0] : null;
  const cut = {};
  if (text.length > limit) { cut.text = text.length; text = text.slice(0, limit); }
  if (html.length > limit) { cut.html = html.length; html = html.slice(0, limit); }
  return { html, text, title: String(d.title).slice(0, 10000), stamp, frames: order, cut,
           status: nav ? nav.responseStatus || 0 : 0 };
}
"""

# In the parent document, on a frame element: its placeholder's number if a
# reader can see the frame; null for what only hides a tracker or parks an ad:
# no box (display:none, here or above), visibility:hidden, a viewport of 2 px
# or less either way, or wholly outside the page's scrollable area.
_PLACE_JS = """
(el, key) => {
  const n = el[key];
  if (typeof n !== 'number' || !el.checkVisibility({ visibilityProperty: true })) return null;
  if (el.clientWidth <= 2 || el.clientHeight <= 2) return null;
  const r = el.getBoundingClientRect(), x = window.scrollX, y = window.scrollY;
  const page = document.scrollingElement || document.documentElement;
  if (r.right + x <= 0 || r.bottom + y <= 0 || r.left + x >= page.scrollWidth || r.top + y >= page.scrollHeight) return null;
  return n;
}
"""


@dataclass
class _Doc:
    """One document's last read: its own stamp and HTML with placeholders, and the frames shown in it."""

    stamp: str
    html: str
    text: str
    title: str
    order: list[int]  # the placeholders' numbers, in document order
    same: bool  # this read moved nothing: the document is as last read
    cut: dict[str, int] = field(default_factory=dict)  # the whole lengths of what the page script cut
    places: dict[Frame, int | None] = field(default_factory=dict)  # child frame → its placeholder; None: not shown
    read: dict[Frame, _Doc] = field(default_factory=dict)  # the child frames read, in document order
    origins: dict[Frame, str] = field(default_factory=dict)

    def tree_stamp(self) -> str:
        """Its stamp and its frames': equal stamps, equal text (a frame that
        navigates has a new stamp; where frames show changes the parent's). The
        "|" sets it apart from the stamp of a read without frames."""
        return self.stamp + "|" + ",".join(f"{self.places[f]}={d.tree_stamp()}" for f, d in self.read.items())


class FrameReader:
    """Reads a tab's page with its frames, keeping each document's last read:
    an unchanged page with unchanged frames moves no HTML, and a change in
    any of them is seen. `display_url` names a frame's URL as the user would;
    `bound`, how much of their text and HTML is taken (`cut` in a read says what was cut)."""

    def __init__(self, key: str, display_url: Callable[[str], str] = str, bound: TextBound = TextBound()) -> None:
        self._key = key
        self._bound = bound
        self._display_url = display_url
        self._placeholder = re.compile(re.escape(f"<{key}:frame:") + r"(\d+)>")
        self._last: _Doc | None = None  # the page's last read, when it had frames

    async def read(self, page: Page, known: str | None) -> dict[str, Any]:
        """`SNAPSHOT_JS`'s answer for the whole tab: `{same, stamp}` when
        nothing changed since the read whose stamp is `known`, else the HTML
        and text with the frames'. Errors reading the page itself propagate;
        a frame that cannot be read is left out."""
        if not page.main_frame.child_frames:  # most pages: one evaluate, as ever
            self._last = None
            reply: dict[str, Any] = await page.evaluate(
                SNAPSHOT_JS, [self._key, known, secrets.token_hex(8), False, self._bound.limit]
            )
            if reply.get("frames"):  # frame elements whose frames Playwright has not seen yet
                reply["html"] = self._placeholder.sub("", reply["html"])
            return reply
        prev = self._last if self._last is not None and known == self._last.tree_stamp() else None
        reply = await page.evaluate(
            SNAPSHOT_JS, [self._key, prev.stamp if prev else None, secrets.token_hex(8), False, self._bound.limit]
        )
        root = self._doc(reply, prev)
        await self._read_frames(page.main_frame, root, prev, _origin(self._display_url(page.url), ""))
        self._last = root
        stamp = root.tree_stamp()
        if stamp == known:
            return {"same": True, "stamp": stamp}
        body, text = self._compose(root)
        cut = dict(root.cut)
        if frames_cut := sum(1 for doc in _frames_of(root) if doc.cut):
            cut["frames"] = frames_cut
        body, text = self._bound.cap(body, text, cut)
        return {"html": body, "text": text, "title": root.title, "stamp": stamp, "cut": cut}

    @staticmethod
    def _doc(reply: dict[str, Any], prev: _Doc | None) -> _Doc:
        if reply.get("same") and prev is not None:
            return _Doc(prev.stamp, prev.html, prev.text, prev.title, prev.order, same=True, cut=prev.cut)
        cut = reply.get("cut")
        return _Doc(
            str(reply.get("stamp") or ""), str(reply.get("html") or ""), str(reply.get("text") or ""),
            str(reply.get("title") or ""), [n for n in reply.get("frames") or [] if isinstance(n, int)], same=False,
            cut={k: int(v) for k, v in cut.items() if k in ("text", "html")} if isinstance(cut, dict) else {},
        )

    async def _read_frames(self, main: Frame, root: _Doc, prev: _Doc | None, origin: str) -> None:
        """Level by level, so the frames read within MAX_FRAMES are the first in document order."""
        deadline = asyncio.get_running_loop().time() + FRAMES_TIMEOUT_S
        level = [(main, root, prev, origin)]
        budget = MAX_FRAMES
        for _depth in range(MAX_DEPTH):
            await asyncio.gather(*(self._place(frame, doc, old, deadline) for frame, doc, old, _ in level))
            chosen: list[tuple[Frame, _Doc, _Doc | None]] = []
            for _frame, doc, old, parent_origin in level:
                shown = {n: f for f, n in doc.places.items() if n is not None}
                for child in (shown[n] for n in doc.order if n in shown):
                    if budget == 0:
                        break
                    budget -= 1
                    doc.origins[child] = _origin(self._display_url(child.url), parent_origin)
                    chosen.append((child, doc, old.read.get(child) if old else None))
            docs = await asyncio.gather(*(self._read_one(child, old, deadline) for child, _, old in chosen))
            level = []
            for (child, parent, old), doc in zip(chosen, docs):
                if doc is not None:
                    parent.read[child] = doc
                    level.append((child, doc, old, parent.origins[child]))

    async def _place(self, frame: Frame, doc: _Doc, prev: _Doc | None, deadline: float) -> None:
        """Which placeholder each child frame of `frame` fills, if it is shown: the
        last read's answer while the document and its frames are unchanged."""
        # A frame with no address yet, or Chromium's own error page (a load it refused, a
        # `file://` frame among them), has nothing to read and may not answer at all.
        children = [f for f in frame.child_frames
                    if not f.is_detached() and f.url and not f.url.startswith("chrome-error:")]
        if doc.same and prev is not None and set(children) == set(prev.places):
            doc.places = dict(prev.places)
            return
        numbers = await asyncio.gather(*(self._number(child, deadline) for child in children))
        doc.places = dict(zip(children, numbers))

    async def _number(self, child: Frame, deadline: float) -> int | None:
        try:
            async with _bounded(deadline):
                handle = await child.frame_element()
                try:
                    n = await handle.evaluate(_PLACE_JS, self._key)
                finally:
                    await handle.dispose()
        except Exception as exc:  # detached, navigated, busy: this frame is not read
            log.debug("frame %s not placed: %s", child.url, exc)
            return None
        return n if isinstance(n, int) else None

    async def _read_one(self, frame: Frame, prev: _Doc | None, deadline: float) -> _Doc | None:
        try:
            async with _bounded(deadline):
                reply = await frame.evaluate(
                    SNAPSHOT_JS, [self._key, prev.stamp if prev else None, secrets.token_hex(8), True,
                                  self._bound.frame_limit]
                )
        except Exception as exc:  # detached mid-read, not responding: the tab is read without it
            log.debug("frame %s not read: %s", frame.url, exc)
            return None
        if int(reply.get("status") or 0) >= 400:
            log.debug("frame %s not read: its server answered HTTP %s", frame.url, reply["status"])
            return None
        return self._doc(reply, prev)

    def _compose(self, doc: _Doc) -> tuple[str, str]:
        """`doc`'s HTML with each frame read at its placeholder (the others'
        dropped), and its text with theirs after it, each under its mark."""
        filled: dict[int, tuple[str, str]] = {}
        for frame, child in doc.read.items():
            body, text = self._compose(child)
            n = doc.places[frame]
            if n is not None and text.strip():  # blank frames (ad slots, spacers) say nothing
                mark = FRAME_MARK.format(origin=doc.origins[frame])
                filled[n] = (f"<div><p>{html.escape(mark)}</p>\n{body}\n</div>", f"{mark}\n{text.strip()}")
        body = self._placeholder.sub(lambda m: filled[int(m[1])][0] if int(m[1]) in filled else "", doc.html)
        texts = [doc.text, *(filled[n][1] for n in doc.order if n in filled)]
        return body, "\n\n".join(t for t in texts if t)  # a frameset's own text is empty


def _frames_of(doc: _Doc) -> list[_Doc]:
    """The frames read in `doc`, nested ones too."""
    return [d for child in doc.read.values() for d in (child, *_frames_of(child))]


def _bounded(deadline: float) -> asyncio.Timeout:
    """FRAME_TIMEOUT_S for one frame, and no later than `deadline` for all."""
    return asyncio.timeout_at(min(asyncio.get_running_loop().time() + FRAME_TIMEOUT_S, deadline))


def _origin(url: str, parent: str) -> str:
    """Where a frame's content comes from, as its mark names it."""
    try:
        parts = urlsplit(url)
    except ValueError:  # a malformed address: say no more than its parent's
        return parent or "an unknown origin"
    if parts.scheme in ("http", "https") and parts.netloc:
        return f"{parts.scheme}://{parts.netloc.rpartition('@')[2]}"  # never a user name or password
    if parts.scheme == "about" or not parts.scheme:
        return parent or url  # about:blank and about:srcdoc are their parent's
    if parts.scheme == "blob":
        return _origin(url[len("blob:"):], parent)
    if parts.scheme == "file":
        return url.split("#", 1)[0]  # a file the user named: the file says more than "file://"
    return f"{parts.scheme}:"
