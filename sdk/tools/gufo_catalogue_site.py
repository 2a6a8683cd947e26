"""gufo_catalogue_site.py: the catalogue's static page, generated from the index.

One self-contained index.html (no network resource of any kind: styles,
script and the index itself are inline), so it can be opened from disk or
served by any static file server. The page lists every entry with its
description, providers, options, conformance summary, a compatibility badge
per API version and the install line; a search box and capability and
hardware filters narrow the list. Everything the page shows comes from the
index: nothing here computes a result.
"""

import html
import json
from pathlib import Path

import gufo_catalogue as cat

STYLE = """
:root { --fg:#1d2330; --muted:#5b6475; --line:#d9dee8; --bg:#f6f7fb; --card:#fff;
        --ok:#1f7a3a; --ok-bg:#e3f4e8; --warn:#8a5a00; --warn-bg:#fdf1d6; --bad:#a4262c; --bad-bg:#fbe3e4;
        --accent:#2f5fb3; }
* { box-sizing: border-box; }
body { margin:0; font:15px/1.45 system-ui, -apple-system, "Segoe UI", "DejaVu Sans", sans-serif;
       color:var(--fg); background:var(--bg); }
header { background:#1d2330; color:#fff; padding:18px 28px; }
header h1 { margin:0; font-size:22px; font-weight:600; }
header p { margin:4px 0 0; color:#c4cad6; font-size:14px; }
main { max-width:1080px; margin:0 auto; padding:18px 28px 40px; }
.controls { display:flex; flex-wrap:wrap; gap:12px; align-items:center; background:var(--card);
            border:1px solid var(--line); border-radius:8px; padding:12px 14px; }
.controls input[type=search] { flex:1 1 260px; font:inherit; padding:7px 10px; border:1px solid var(--line);
                               border-radius:6px; }
.controls label { color:var(--muted); font-size:13px; }
.controls select { font:inherit; padding:6px 8px; border:1px solid var(--line); border-radius:6px;
                   background:#fff; }
#count { color:var(--muted); font-size:13px; margin:12px 2px; }
.entry { background:var(--card); border:1px solid var(--line); border-radius:8px; padding:16px 18px;
         margin-bottom:14px; }
.entry h2 { margin:0; font-size:19px; display:flex; flex-wrap:wrap; gap:8px; align-items:baseline; }
.entry h2 .version { color:var(--muted); font-size:14px; font-weight:400; }
.tag { display:inline-block; font-size:12px; padding:1px 8px; border-radius:10px; border:1px solid var(--line);
       color:var(--muted); background:#fff; font-weight:500; }
.tag.official { color:var(--accent); border-color:#b9c9ea; background:#eef3fc; }
.desc { margin:6px 0 10px; }
.meta { color:var(--muted); font-size:13px; margin-bottom:10px; }
.meta span + span::before { content:" · "; }
.grid { display:grid; grid-template-columns:150px 1fr; gap:6px 14px; font-size:14px; }
.grid dt { color:var(--muted); }
.grid dd { margin:0; }
.providers { margin:0; padding:0; list-style:none; }
.providers li { margin:0 0 2px; }
code { font:13px/1.4 ui-monospace, "DejaVu Sans Mono", monospace; background:#eef0f5; padding:1px 5px;
       border-radius:4px; }
.install { display:block; white-space:pre-wrap; overflow-wrap:anywhere; padding:8px 10px; margin-top:2px; }
.badge { display:inline-flex; font-size:12px; border-radius:4px; overflow:hidden; margin:0 6px 4px 0;
         border:1px solid var(--line); }
.badge b { background:#4a5364; color:#fff; font-weight:500; padding:2px 6px; }
.badge i { font-style:normal; padding:2px 6px; }
.badge.passed i { background:var(--ok-bg); color:var(--ok); }
.badge.incomplete i { background:var(--warn-bg); color:var(--warn); }
.badge.failed i, .badge.broken i { background:var(--bad-bg); color:var(--bad); }
.verdict { font-weight:600; }
.verdict.passed { color:var(--ok); } .verdict.incomplete { color:var(--warn); } .verdict.failed { color:var(--bad); }
details { margin-top:4px; font-size:13px; }
details ul { margin:4px 0 0; padding-left:18px; }
.empty { text-align:center; color:var(--muted); padding:30px; }
footer { color:var(--muted); font-size:12px; margin-top:24px; }
"""

SCRIPT = r"""
(function () {
  'use strict';
  const index = JSON.parse(document.getElementById('catalogue-index').textContent);
  const list = document.getElementById('entries');
  const search = document.getElementById('search');
  const capability = document.getElementById('capability');
  const hardware = document.getElementById('hardware');
  const count = document.getElementById('count');

  function el(tag, attrs, children) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k === 'text') node.textContent = v; else node.setAttribute(k, v);
    }
    for (const child of children || []) node.append(child);
    return node;
  }
  function words(s) { return s.replace(/_/g, ' '); }
  const verdictText = {passed: 'passes', incomplete: 'partly run', failed: 'fails', not_run: 'not run'};

  function badge(row) {
    const state = !row.builds ? 'broken' : row.conformance;
    const text = !row.builds ? 'does not build' : 'builds, conformance ' + verdictText[row.conformance];
    const title = 'API ' + row.api_version + ': ' + text + ' (' + row.by + ', ' + row.checked +
                  (row.hardware.length ? ', on ' + row.hardware.join(', ') : '') + ')';
    return el('span', {class: 'badge ' + state, title: title, 'data-api': row.api_version},
              [el('b', {text: 'API ' + row.api_version}), el('i', {text: !row.builds ? '✗ build' :
                row.conformance === 'passed' ? '✓' : row.conformance === 'incomplete' ? '◐ partial' : '✗'})]);
  }

  function card(e) {
    const c = e.conformance;
    const providers = el('ul', {class: 'providers'}, e.providers.map(p => el('li', {}, [
      el('code', {text: p.id}), ' ' + words(p.capability) + ' · ' + (p.keys.join(', ') || 'no keys') +
      (p.speculative ? ' · speculative: ' + p.speculative.join(', ') : '')])));
    const options = e.options.length ? el('details', {}, [el('summary', {text: e.options.length + ' option(s)'}),
      el('ul', {}, e.options.map(o => el('li', {}, [el('code', {text: '--' + o.name}),
        ' (' + o.type + (o.default !== undefined ? ', default ' + o.default : '') + '): ' + o.help])))])
      : el('span', {text: 'none'});
    const notRun = [];
    for (const p of c.providers) for (const n of p.not_run) notRun.push(el('li', {}, [el('code', {text: p.provider}),
      ' ' + n.case + (n.outcome === 'failed' ? ' failed: ' : ' could not run here: ') + n.detail]));
    const t = c.totals;
    const conf = el('div', {}, [
      el('span', {class: 'verdict ' + c.verdict, text: verdictText[c.verdict]}),
      ' — ' + t.passed + ' passed, ' + t.failed + ' failed, ' + t.could_not_run + ' could not run here, ' +
      t.not_applicable + ' not applicable; API ' + c.api_version + ', ' + c.hardware.cpu + ' (' +
      c.hardware.cpu_count + ' CPUs), device: ' + c.hardware.device]);
    if (notRun.length) conf.append(el('details', {}, [el('summary', {text: notRun.length + ' case(s) not passed'}),
                                                      el('ul', {}, notRun)]));
    const repo = e.repository.startsWith('gufo:') ? 'in Gufo\'s tree: ' + e.repository.slice(5) : e.repository;
    return el('article', {class: 'entry', id: 'entry-' + e.name, 'data-name': e.name}, [
      el('h2', {}, [e.name, el('span', {class: 'version', text: e.version}),
                    el('span', {class: 'tag ' + e.origin, text: e.origin})]),
      el('p', {class: 'desc', text: e.description}),
      el('div', {class: 'meta'}, [el('span', {text: e.license}), el('span', {text: repo}),
        el('span', {text: 'needs API ' + e.api_range.requirement.replace('>= ', '≥ ') + ', < ' + e.api_range.below}),
        el('span', {text: 'tested on ' + e.hardware_tested.join(', ')})]),
      el('dl', {class: 'grid'}, [
        el('dt', {text: 'Compatibility'}), el('dd', {class: 'compat'}, e.compatibility.map(badge)),
        el('dt', {text: 'Providers'}), el('dd', {}, [providers]),
        el('dt', {text: 'Options'}), el('dd', {}, [options]),
        el('dt', {text: 'Conformance'}), el('dd', {}, [conf]),
        el('dt', {text: 'Install'}), el('dd', {}, [el('code', {class: 'install', text: e.install})])])]);
  }

  function haystack(e) {
    return [e.name, e.description, e.license, e.repository, e.origin]
      .concat(e.providers.flatMap(p => [p.id, p.capability, words(p.capability)].concat(p.keys)))
      .concat(e.options.map(o => o.name)).join(' ').toLowerCase();
  }

  for (const cap of index.capabilities) capability.append(el('option', {value: cap, text: words(cap)}));
  for (const hw of index.hardware) hardware.append(el('option', {value: hw, text: hw}));
  const cards = index.entries.map(e => ({entry: e, node: card(e), text: haystack(e)}));
  for (const c of cards) list.append(c.node);
  const empty = el('p', {class: 'empty', text: 'No extension matches.'});
  list.append(empty);

  function apply() {
    const q = search.value.trim().toLowerCase().split(/\s+/).filter(Boolean);
    let shown = 0;
    for (const c of cards) {
      const ok = q.every(w => c.text.includes(w)) &&
        (!capability.value || c.entry.providers.some(p => p.capability === capability.value)) &&
        (!hardware.value || c.entry.hardware_tested.includes(hardware.value));
      c.node.hidden = !ok;
      if (ok) shown++;
    }
    empty.hidden = shown !== 0;
    count.textContent = 'Showing ' + shown + ' of ' + cards.length + ' extensions · current API ' +
                        index.api_version;
  }
  search.addEventListener('input', apply);
  capability.addEventListener('change', apply);
  hardware.addEventListener('change', apply);
  apply();
})();
"""

PAGE = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:">
<title>Gufo extension catalogue</title>
<style>{style}</style>
</head>
<body>
<header>
  <h1>Gufo extension catalogue</h1>
  <p>Extensions built against Gufo and qualified by its conformance kit. Every badge is a build and conformance run
  against one extension API version; nothing here is typed by hand.</p>
</header>
<main>
  <div class="controls" role="search">
    <input id="search" type="search" placeholder="Search name, description, provider, key, option…" aria-label="Search">
    <label for="capability">Capability</label>
    <select id="capability"><option value="">any</option></select>
    <label for="hardware">Hardware tested</label>
    <select id="hardware"><option value="">any</option></select>
  </div>
  <p id="count"></p>
  <section id="entries"></section>
  <noscript><ul>{fallback}</ul></noscript>
  <footer>Generated by <code>gufo_sdk.py catalogue-site</code> from the index of API {api}:
  {n} entries. Compatibility: ✓ builds and passes conformance; ◐ builds, nothing failed, but some cases could not
  run on the machine that checked it (a GPU provider without a GPU); ✗ fails. See docs/catalogue.md.</footer>
</main>
<script type="application/json" id="catalogue-index">{data}</script>
<script>{script}</script>
</body>
</html>
"""


def page(index):
    """The page's HTML for an index document."""
    entries = []
    for entry in index["entries"]:
        entry = dict(entry)
        entry["install"] = cat.install_line(entry)
        entries.append(entry)
    data = dict(index, entries=entries)
    # Inside <script>, "</" would end the element: escape it (JSON allows "<\/").
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":")).replace("</", "<\\/")
    fallback = "".join(f"<li>{html.escape(e['name'])} {html.escape(e['version'])}: {html.escape(e['description'])}"
                       "</li>" for e in entries)
    return PAGE.format(style=STYLE, script=SCRIPT, data=text, fallback=fallback, api=html.escape(index["api_version"]),
                       n=len(entries))


def write_site(index, out_dir):
    out = Path(out_dir) / "index.html"
    cat.write_text(out, page(index))
    return out
