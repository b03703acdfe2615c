"""MCP server ``google_search``: ``search(query)`` and ``fetch(url)`` over the calculator references.

The corpus is every registry calculator's ``reference_markdown()`` at ``calcmate://calculators/<id>``
(MedMCP-Calc's ``google_search`` server, made offline and reproducible). Search is BM25 (bm25s)
over the name, aliases and document, Unicode-folded so "SpO₂/FiO₂" finds "spo2 fio2".

By default (``fmt="official"``) both tools answer in the official server's shapes
(``calcmate.tools.official``): ``search`` gives a JSON list of ``{title, link, snippet, position,
date}`` (10 hits, as the official Serper call asks for), whose links ``fetch`` accepts, and
``fetch`` gives ``"Contents of {url}:\n\n" + markdown``; errors are the official strings.

An optional web backend (off by default) extends both tools to the web: set
``CALCMATE_WEB_SEARCH=brave`` and ``BRAVE_API_KEY``; then ``search`` appends web hits and
``fetch`` accepts http(s) URLs. Keys come from the environment only.

Run as a stdio server: ``python -m calcmate.tools.reference``.
"""

from __future__ import annotations

import argparse
import html
import os
import re
from dataclasses import dataclass
from typing import Protocol

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

from calcmate.calculators.spec import normalize_name
from calcmate.tools import official

URL_PREFIX = "calcmate://calculators/"


@dataclass(frozen=True)
class Hit:
    title: str
    url: str
    snippet: str
    score: float


def _tokens(text: str) -> list[str]:
    return normalize_name(text).split()


_NUMBER_ROW = re.compile(r"^\|(?:[\s\d.eE+:-]*\|)+$")


def _searchable(markdown: str) -> str:
    """The document less its all-number table rows (e.g. the CDC LMS tables): fetch serves them,
    but they hold nothing to search for and would only lengthen the document, which BM25 penalises."""
    return "\n".join(ln for ln in markdown.splitlines() if not _NUMBER_ROW.match(ln.strip()))


class ReferenceIndex:
    """BM25 over the registry's reference documents (built once, ~ms per query)."""

    def __init__(self, docs: dict[str, tuple[str, str, str]] | None = None, aliases: dict[str, tuple[str, ...]] | None = None):
        """``docs``: url -> (title, searchable extra text, markdown); defaults to the registry.
        ``aliases``: url -> the names that identify that document exactly."""
        import logging

        import bm25s

        logging.getLogger("bm25s").setLevel(logging.WARNING)
        if docs is None:
            from calcmate.calculators.registry import registry

            docs, aliases = {}, {}
            for c in registry():
                extra = " ".join([c.name, c.name, *c.aliases, *c.tags])
                docs[c.url] = (c.name, extra, c.reference_markdown())
                aliases[c.url] = tuple(c.aliases)
        self.docs = docs
        self.urls = list(docs)
        # names and aliases that identify one document exactly (an alias two documents share identifies neither)
        names: dict[str, set[str]] = {}
        for url, (title, extra, _) in docs.items():
            for n in [title, *(aliases or {}).get(url, ())]:
                names.setdefault(" ".join(_tokens(n)), set()).add(url)
        self._exact = {k: next(iter(v)) for k, v in names.items() if k and len(v) == 1}
        corpus = [" ".join(_tokens(f"{t} {x} {_searchable(md)}")) for t, x, md in docs.values()]
        self._bm25 = bm25s.BM25()
        if corpus:
            self._bm25.index(bm25s.tokenize(corpus, stopwords="en", show_progress=False), show_progress=False)

    def search(self, query: str, k: int = 5) -> list[Hit]:
        import bm25s

        q = " ".join(_tokens(query))
        if not q or not self.urls:
            return []
        qt = bm25s.tokenize([q], stopwords="en", show_progress=False)
        if not qt.vocab:
            return []
        idx, scores = self._bm25.retrieve(qt, k=min(k, len(self.urls)), show_progress=False)
        exact = self._exact.get(q)
        if exact is not None:  # a query that is exactly a calculator's name or alias ("SOFA", "Anion Gap"): that page first
            pairs = [(self.urls.index(exact), float("inf"))] + [(int(i), float(sc)) for i, sc in zip(idx[0], scores[0])
                                                                if self.urls[int(i)] != exact]
            idx, scores = [[i for i, _ in pairs[:k]]], [[sc for _, sc in pairs[:k]]]
        hits = []
        for i, s in zip(idx[0], scores[0]):
            if s <= 0:
                continue
            url = self.urls[int(i)]
            title, _, md = self.docs[url]
            hits.append(Hit(title, url, _snippet_from(self._lines(url), q), float(s)))
        return hits

    def _lines(self, url: str) -> list[tuple[str, frozenset[str]]]:
        """A document's snippet candidates with their word sets, tokenised once (search is per call)."""
        cache = self.__dict__.setdefault("_line_cache", {})
        if url not in cache:
            md = _searchable(self.docs[url][2])
            cache[url] = [(ln.strip(), frozenset(_tokens(ln))) for ln in md.splitlines()
                          if ln.strip() and not ln.startswith(("#", "URL:"))]
        return cache[url]

    def fetch(self, url: str) -> str:
        url = url.strip()
        if url in self.docs:
            return self.docs[url][2]
        key = url[len(URL_PREFIX):] if url.startswith(URL_PREFIX) else url
        for u, (title, _, md) in self.docs.items():  # tolerate an id or a title instead of the URL
            if normalize_name(u[len(URL_PREFIX):]) == normalize_name(key) or normalize_name(title) == normalize_name(key):
                return md
        hits = self.search(key, k=3)
        hint = f" Did you mean: {', '.join(h.url for h in hits)}?" if hits else ""
        raise ToolError(f"no document at {url!r}.{hint} Use search to find calculator URLs.")


def _snippet_from(lines: list[tuple[str, frozenset[str]]], query: str, width: int = 240) -> str:
    """The document lines sharing the most words with the query (after the title block)."""
    words = set(query.split())
    ranked = sorted(lines, key=lambda lw: -len(words & lw[1]))
    out = " … ".join(ln for ln, _ in ranked[:2]) if ranked else ""
    return out if len(out) <= width else out[: width - 1] + "…"


def format_hits(hits: list[Hit]) -> str:
    if not hits:
        return "no results; try other words (calculator name, condition, or what it estimates)"
    return "\n\n".join(f"{n}. {h.title}\n   URL: {h.url}\n   {h.snippet}" for n, h in enumerate(hits, 1))


# -- optional web backend -----------------------------------------------------------------------
class WebBackend(Protocol):
    def search(self, query: str, k: int) -> list[Hit]: ...
    def fetch(self, url: str) -> str: ...


class BraveSearch:
    """Brave Search API (``BRAVE_API_KEY``) plus plain HTTP fetch with crude HTML-to-text."""

    def __init__(self, api_key: str, timeout: float = 15.0):
        import httpx

        self._http = httpx.Client(timeout=timeout, follow_redirects=True, headers={"User-Agent": "CalcMate/0.1"})
        self._key = api_key

    def search(self, query: str, k: int) -> list[Hit]:
        r = self._http.get("https://api.search.brave.com/res/v1/web/search", params={"q": query, "count": k},
                           headers={"X-Subscription-Token": self._key, "Accept": "application/json"})
        r.raise_for_status()
        res = r.json().get("web", {}).get("results", [])[:k]
        return [Hit(x.get("title", ""), x.get("url", ""), _strip_html(x.get("description", "")), 0.0) for x in res]

    def fetch(self, url: str) -> str:
        r = self._http.get(url)
        r.raise_for_status()
        return _strip_html(r.text)[:50_000]


def _strip_html(text: str) -> str:
    text = re.sub(r"(?is)<(script|style).*?</\1>", " ", text)
    text = re.sub(r"(?s)<[^>]+>", " ", text)
    return re.sub(r"[ \t]+", " ", html.unescape(text)).strip()


def web_backend_from_env() -> WebBackend | None:
    kind = os.environ.get("CALCMATE_WEB_SEARCH", "").strip().lower()
    if not kind or kind == "off":
        return None
    if kind == "brave":
        key = os.environ.get("BRAVE_API_KEY")
        if not key:
            raise RuntimeError("CALCMATE_WEB_SEARCH=brave needs BRAVE_API_KEY in the environment")
        return BraveSearch(key)
    raise RuntimeError(f"unknown CALCMATE_WEB_SEARCH backend {kind!r} (supported: brave)")


def build_server(index: ReferenceIndex | None = None, web: WebBackend | None = None, k: int | None = None,
                 fmt: official.ToolFormat = "official") -> MCPServer:
    """The ``google_search`` MCP server over the offline corpus (plus the optional web backend).
    Without ``index`` the corpus is indexed in a background thread, so a stdio server answers
    ``list_tools`` at once and the first search waits for the index."""
    if index is None:
        import concurrent.futures

        future = concurrent.futures.ThreadPoolExecutor(1).submit(ReferenceIndex)
    server = MCPServer(official.SEARCH, log_level="WARNING")

    def idx() -> ReferenceIndex:
        return index if index is not None else future.result()
    k = k or (10 if fmt == "official" else 5)

    def hits_for(query: str) -> tuple[list[Hit], str]:
        hits = idx().search(query, k)
        if web is not None:
            try:
                hits += web.search(query, k)
            except Exception as e:  # the offline corpus still answers
                return hits, f"web search failed: {e}"
        return hits, ""

    def fetch_doc(url: str) -> str:
        if web is not None and url.startswith(("http://", "https://")):
            return web.fetch(url)
        return idx().fetch(url)

    if fmt == "official":
        @server.tool(name="search", description=official.SEARCH_DOC)
        def search(query: str) -> str:
            hits, _ = hits_for(query if isinstance(query, str) else str(query))
            return official.search_results([{"title": h.title, "link": h.url, "snippet": h.snippet, "position": n,
                                             "date": None} for n, h in enumerate(hits, 1)])

        @server.tool(name="fetch", description=official.FETCH_DOC)
        def fetch(url: str) -> str:
            if not isinstance(url, str) or not url.strip():
                return official.URL_REQUIRED
            try:
                return official.fetched(url, fetch_doc(url.strip()))
            except ToolError:
                return official.FETCH_STATUS_ERROR.format(url=url, status=404)
            except Exception as e:
                return f"<error>Browser fetch failed: {e}</error>"
    elif fmt == "calcmate":
        @server.tool(
            name="search",
            description="Search medical calculator references (formulas, scoring criteria, interpretation). "
            "Returns ranked hits with title, URL and snippet; open one with fetch(url).",
        )
        def search_calcmate(query: str) -> str:
            if not isinstance(query, str) or not query.strip():
                raise ToolError("query is empty: describe the calculator or what it estimates")
            hits, warn = hits_for(query)
            return format_hits(hits) + (f"\n\n[{warn}]" if warn else "")

        @server.tool(name="fetch", description="Fetch a reference document (markdown) by the URL from search.")
        def fetch_calcmate(url: str) -> str:
            if not isinstance(url, str) or not url.strip():
                raise ToolError("url is empty: pass a URL returned by search")
            try:
                return fetch_doc(url.strip())
            except ToolError:
                raise
            except Exception as e:
                raise ToolError(f"fetch failed: {e}") from None
    else:
        raise ValueError(f"tools.format: unknown {fmt!r}; choose one of {official.FORMATS}")

    return server


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description="CalcMate google_search MCP server (stdio): search/fetch calculator references offline.")
    p.add_argument("--k", type=int, default=None, help="hits per search (default: 10 official, 5 calcmate)")
    p.add_argument("--format", choices=official.FORMATS, default=os.environ.get("CALCMATE_TOOLS_FORMAT", "official"),
                   help="observation format: the official MedMCP-Calc server's (default) or CalcMate's richer one")
    a = p.parse_args(argv)
    build_server(web=web_backend_from_env(), k=a.k, fmt=a.format).run("stdio")


if __name__ == "__main__":
    main()
