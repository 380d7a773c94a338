// The per-query explorer and the false-negative gallery of report.html (helpers: explorer.js).
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
  const { el, fmt, thumbnail, labelAttrs, isFalseNegative, queryLabel, resultCells, resultHeaders, falseNegativeNote, queryHead, queryList, hashKey, recordKey, streamInfo } =
    crisscrossExplorer({ thumbnails: thumbs, captions: captions, streams: streams });
  const recordByKey = new Map(records.map((record) => [recordKey(record.stream, record.query), record]));
  const gallery = (queries && queries.false_negatives) || [];
  const galleryKeys = new Set(gallery.map((entry) => recordKey(entry.stream, entry.query)));

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
  const detail = document.getElementById("query-detail");
  const picker = queryList(records, showQuery, (record) => [
    galleryKeys.has(recordKey(record.stream, record.query)) ? el("span", { className: "badge fn", text: "false negative" }) : null,
  ]);

  function showQuery(stream, query) {
    const record = recordByKey.get(recordKey(stream, query));
    if (!record) return;
    const info = streamInfo.get(stream) || {};
    detail.replaceChildren();
    detail.setAttribute("data-query-id", query);
    detail.setAttribute("data-stream", stream);
    detail.appendChild(queryHead(record));
    const header = el("tr", {}, [el("th", { className: "num", text: "rank" }), ...resultHeaders(info)]);
    const body = el("tbody", { "data-testid": "result-rows" });
    for (const result of record.results) {
      const row = el("tr", { "data-testid": "result-row", ...labelAttrs(result) }, [
        el("td", { className: "num", text: String(result.rank) }),
        ...resultCells(result, info),
      ]);
      if (isFalseNegative(stream, result)) row.classList.add("false-negative");
      body.appendChild(row);
    }
    const table = el("table", { className: "results", id: "result-table", "data-testid": "result-table" }, [
      el("thead", {}, [header]),
      body,
    ]);
    detail.appendChild(el("div", { className: "table-wrap" }, [table]));
    detail.appendChild(falseNegativeNote(info));
    picker.pick(recordKey(stream, query));
  }

  picker.render();
  // "#query=<stream>/<query id>" (URI-encoded) opens that query; else the first one.
  const start = recordByKey.get(hashKey());
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
      picker.reset();
      showQuery(entry.stream, entry.query);
      document.getElementById("explorer").scrollIntoView();
    };
    card.addEventListener("click", open);
    card.addEventListener("keydown", (event) => { if (event.key === "Enter") open(); });
    cards.appendChild(card);
  }
})();
