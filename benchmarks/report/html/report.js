// The per-query explorer and the false-negative gallery of report.html.
// Plain JavaScript, no framework; every piece of data goes in through textContent or a
// property (no HTML parsing of data), image sources only when they are data:image/ URIs.
"use strict";

(function () {
  const data = JSON.parse(document.getElementById("report-data").textContent);
  const queries = data.queries;
  const thumbs = data.thumbnails || {};
  const captions = (queries && queries.captions) || {};
  const streams = (queries && queries.streams) || [];
  const records = (queries && queries.records) || [];
  const streamInfo = new Map(streams.map((stream) => [stream.name, stream]));
  const recordKey = (stream, query) => stream + "\u0000" + query;
  const recordByKey = new Map(records.map((record) => [recordKey(record.stream, record.query), record]));
  const gallery = (queries && queries.false_negatives) || [];
  const galleryKeys = new Set(gallery.map((entry) => recordKey(entry.stream, entry.query)));

  function el(tag, props, children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(props || {})) {
      if (key === "text") node.textContent = value;
      else if (key === "className") node.className = value;
      else if (key.startsWith("data-") || key.startsWith("aria-") || key === "title" || key === "id" || key === "type" || key === "role")
        node.setAttribute(key, String(value));
      else node[key] = value;
    }
    for (const child of children || []) if (child) node.appendChild(child);
    return node;
  }

  function fmt(value, digits) {
    return value === null || value === undefined ? "–" : Number(value).toFixed(digits);
  }

  function thumbnail(id, alt) {
    const src = thumbs[id];
    if (typeof src !== "string" || !src.startsWith("data:image/")) return null;
    const img = el("img", { className: "thumb", alt: alt || id, title: id });
    img.src = src;
    return img;
  }

  // What an id shows: a caption's text, else the id itself (image file names).
  function textOf(id) {
    return Object.prototype.hasOwnProperty.call(captions, id) ? captions[id] : id;
  }

  function itemCell(id, kind) {
    const cell = el("div", { className: "item" });
    if (kind === "image") {
      const img = thumbnail(id);
      if (img) cell.appendChild(img);
      cell.appendChild(el("div", { className: "qid", text: id }));
    } else {
      cell.appendChild(el("div", { className: "caption", text: textOf(id) }));
      cell.appendChild(el("div", { className: "qid", text: id }));
    }
    return cell;
  }

  function cocoCell(value) {
    if (value === true) return el("span", { className: "yes", text: "positive" });
    if (value === false) return el("span", { className: "no", text: "wrong" });
    return el("span", { className: "unknown", text: "–" });
  }

  function labelAttrs(result) {
    return {
      "data-rank": result.rank,
      "data-result-id": result.id,
      "data-human-score": result.human === null || result.human === undefined ? "" : result.human,
      "data-coco-positive": result.coco === null || result.coco === undefined ? "" : String(result.coco),
      "data-cider": result.cider === null || result.cider === undefined ? "" : result.cider,
    };
  }

  function isFalseNegative(stream, result) {
    const info = streamInfo.get(stream);
    return result.coco === false && typeof result.human === "number" && info && result.human >= info.human_threshold;
  }

  // --- bound note --------------------------------------------------------------------------
  const boundNote = document.getElementById("sample-bound");
  if (!queries) {
    boundNote.textContent = "This run kept no per-query results (re-run the quality benchmark to get them).";
  } else {
    const bound = queries.bound;
    const parts = streams.map((stream) => stream.name + ": " + stream.shown + " of " + stream.queries);
    boundNote.textContent =
      "Sample: at most " + bound.max_queries + " queries (" + bound.per_stream + " per stream), " +
      "top " + bound.depth + " results each, seed " + bound.seed + "; queries with false negatives and " +
      "CxC-rated results first. Shown " + parts.join(", ") + ". Thumbnails: at most " + data.max_thumbnails +
      " (" + Object.keys(thumbs).length + " embedded).";
  }

  // --- query list --------------------------------------------------------------------------
  const select = document.getElementById("stream-select");
  const search = document.getElementById("query-search");
  const list = document.getElementById("query-list");
  const count = document.getElementById("query-count");
  const detail = document.getElementById("query-detail");
  select.appendChild(el("option", { value: "", text: "all streams" }));
  for (const stream of streams) {
    select.appendChild(el("option", { value: stream.name, text: stream.name + " (" + stream.shown + ")" }));
  }
  let selected = null;

  function queryLabel(record) {
    return record.query_kind === "caption" ? textOf(record.query) : record.query;
  }

  function renderList() {
    const needle = search.value.trim().toLowerCase();
    const stream = select.value;
    list.replaceChildren();
    let shown = 0;
    for (const record of records) {
      if (stream && record.stream !== stream) continue;
      const label = queryLabel(record);
      if (needle && !label.toLowerCase().includes(needle) && !record.query.toLowerCase().includes(needle)) continue;
      shown += 1;
      const key = recordKey(record.stream, record.query);
      const button = el(
        "button",
        {
          type: "button",
          "data-testid": "query-item",
          "data-query-id": record.query,
          "data-stream": record.stream,
          "aria-selected": String(key === selected),
        },
        [
          el("span", { className: "badge", text: record.stream }),
          galleryKeys.has(key) ? el("span", { className: "badge fn", text: "false negative" }) : null,
          document.createTextNode(" " + (record.query_kind === "caption" ? label : "")),
          el("span", { className: "qid", text: record.query }),
        ],
      );
      button.addEventListener("click", () => showQuery(record.stream, record.query));
      list.appendChild(el("li", {}, [button]));
    }
    count.textContent = shown + " of " + records.length + " queries";
  }

  function showQuery(stream, query) {
    const record = recordByKey.get(recordKey(stream, query));
    if (!record) return;
    selected = recordKey(stream, query);
    const info = streamInfo.get(stream) || {};
    detail.replaceChildren();
    detail.setAttribute("data-query-id", query);
    detail.setAttribute("data-stream", stream);
    const head = el("div", { className: "query-head" });
    if (record.query_kind === "image") {
      const img = thumbnail(query);
      if (img) head.appendChild(img);
    }
    head.appendChild(
      el("div", {}, [
        el("div", { className: "text", "data-testid": "query-text", text: queryLabel(record) }),
        el("div", { className: "qid", text: stream + " · " + query + (record.cxc_rated ? " · rated by CxC" : "") }),
      ]),
    );
    detail.appendChild(head);
    const human = info.human_ratings ? "CxC " + info.human_ratings.toUpperCase() + " (0–5)" : "CxC (not loaded)";
    const header = el("tr", {}, [
      el("th", { className: "num", text: "rank" }),
      el("th", { text: info.target_kind === "image" ? "image" : "caption" }),
      el("th", { className: "num", text: "score" }),
      el("th", { className: "num", text: human }),
      el("th", { text: "MS-COCO" }),
      el("th", { className: "num", text: "CIDEr-D" }),
    ]);
    const body = el("tbody", { "data-testid": "result-rows" });
    for (const result of record.results) {
      const row = el("tr", { "data-testid": "result-row", ...labelAttrs(result) }, [
        el("td", { className: "num", text: String(result.rank) }),
        el("td", {}, [itemCell(result.id, info.target_kind)]),
        el("td", { className: "num", text: fmt(result.score, 4) }),
        el("td", { className: "num", text: fmt(result.human, 2) }),
        el("td", {}, [info.coco_labels ? cocoCell(result.coco) : el("span", { className: "unknown", text: "n/a" })]),
        el("td", { className: "num", text: info.cider ? fmt(result.cider, 3) : "n/a" }),
      ]);
      if (isFalseNegative(stream, result)) row.classList.add("false-negative");
      body.appendChild(row);
    }
    const table = el("table", { className: "results", id: "result-table", "data-testid": "result-table" }, [
      el("thead", {}, [header]),
      body,
    ]);
    detail.appendChild(el("div", { className: "table-wrap" }, [table]));
    detail.appendChild(
      el("p", {
        className: "note",
        text: "Highlighted: MS-COCO counts the result wrong but CxC rates it ≥ " + fmt(info.human_threshold, 1) + ". " +
          "“–”: CxC did not rate the pair. n/a: not defined for this stream.",
      }),
    );
    renderList();
  }

  search.addEventListener("input", renderList);
  select.addEventListener("change", renderList);
  renderList();
  // "#query=<stream>/<query id>" (URI-encoded) opens that query; else the first one.
  const wanted = /^#query=([^/]*)\/(.*)$/.exec(location.hash);
  const start = wanted && recordByKey.get(recordKey(decodeURIComponent(wanted[1]), decodeURIComponent(wanted[2])));
  if (start) showQuery(start.stream, start.query);
  else if (records.length) showQuery(records[0].stream, records[0].query);

  // --- false-negative gallery ---------------------------------------------------------------
  const cards = document.getElementById("false-negative-cards");
  const galleryNote = document.getElementById("false-negatives-note");
  let entries = gallery;
  if (!queries) {
    // an older run: report.json's strongest examples per direction
    entries = [];
    for (const [direction, view] of Object.entries(data.report.false_negatives || {})) {
      for (const example of view.examples || []) {
        entries.push({
          stream: direction, query: example.query, id: example.retrieved, rank: example.rank,
          score: null, human: example.cxc_score, coco: false, cider: example.cider_d, caption: example.caption,
        });
      }
    }
  }
  galleryNote.textContent = entries.length
    ? "Results in a top " + ((queries && queries.bound.depth) || 10) + " that MS-COCO counts wrong and CxC's raters " +
      "score at least the CxC positive threshold, human score first, then rank (" + entries.length + " shown" +
      (queries ? ", at most " + queries.bound.max_false_negatives : "") + "). Click one to open its query."
    : "No result of the run was both MS-COCO-wrong and rated similar by CxC (or CxC was not loaded).";
  for (const entry of entries) {
    const info = streamInfo.get(entry.stream) || {
      query_kind: entry.stream.startsWith("i") ? "image" : "caption",
      target_kind: entry.stream.endsWith("i") ? "image" : "caption",
    };
    const side = (id, kind, label) => {
      const box = el("div", {}, [el("div", { className: "label", text: label })]);
      if (kind === "image") {
        const img = thumbnail(id);
        if (img) box.appendChild(img);
        box.appendChild(el("div", { className: "qid", text: id }));
      } else {
        const text = Object.prototype.hasOwnProperty.call(captions, id) ? captions[id] : entry.caption || id;
        box.appendChild(el("div", { className: "caption", text: text }));
      }
      return box;
    };
    const card = el(
      "div",
      { className: "card", role: "button", tabIndex: 0, "data-testid": "false-negative", "data-stream": entry.stream, "data-query-id": entry.query, ...labelAttrs(entry) },
      [
        el("div", { className: "label", text: entry.stream + " · rank " + entry.rank + " · CxC " + fmt(entry.human, 2) +
          " · CIDEr-D " + fmt(entry.cider, 3) + " · MS-COCO wrong" }),
        el("div", { className: "pair" }, [side(entry.query, info.query_kind, "query"), side(entry.id, info.target_kind, "retrieved")]),
      ],
    );
    const open = () => {
      if (!recordByKey.has(recordKey(entry.stream, entry.query))) return;
      select.value = "";
      search.value = "";
      showQuery(entry.stream, entry.query);
      document.getElementById("explorer").scrollIntoView();
    };
    card.addEventListener("click", open);
    card.addEventListener("keydown", (event) => { if (event.key === "Enter") open(); });
    cards.appendChild(card);
  }
})();
