// compare.html: each variant's headline quality and, per sampled query, the variants' top
// results side by side (helpers: explorer.js). Movement and overlap come precomputed.
"use strict";

(function () {
  const data = JSON.parse(document.getElementById("report-data").textContent);
  const variants = data.variants || [];
  const entries = data.queries || [];
  const streams = data.streams || [];
  const { el, fmt, labelAttrs, isFalseNegative, resultCells, resultHeaders, falseNegativeNote, queryHead, queryList, hashKey, recordKey, streamInfo } =
    crisscrossExplorer({ thumbnails: data.thumbnails, captions: data.captions, streams: streams });
  const entryByKey = new Map(entries.map((entry) => [recordKey(entry.stream, entry.query), entry]));
  const baseline = variants[0];

  // --- headline: metric rows, one column per variant ------------------------------------------
  const reported = (data.compare && data.compare.variants) || [];
  const metrics = [];
  for (const entry of reported) for (const name of Object.keys(entry.quality || {})) if (!metrics.includes(name)) metrics.push(name);
  const headRow = el("tr", {}, [el("th", { text: "metric (×100)" }), ...reported.map((entry) => el("th", { className: "num", text: entry.name }))]);
  const headBody = el("tbody", {});
  for (const metric of metrics) {
    const cells = reported.map((entry) => {
      const measured = (entry.quality || {})[metric];
      if (!measured) return el("td", { className: "num", text: "–" });
      const ci = Array.isArray(measured.ci95) ? " [" + fmt(measured.ci95[0], 1) + ", " + fmt(measured.ci95[1], 1) + "]" : "";
      return el("td", { className: "num", "data-variant": entry.name, "data-metric": metric, text: fmt(measured.value, 1) + ci });
    });
    headBody.appendChild(el("tr", { "data-testid": "headline-row", "data-metric": metric }, [el("th", { text: metric }), ...cells]));
  }
  document.getElementById("headline-table").appendChild(
    el("table", { "data-testid": "headline-table" }, [el("thead", {}, [headRow]), headBody]),
  );

  // --- bound note ----------------------------------------------------------------------------
  const boundNote = document.getElementById("sample-bound");
  if (!data.bound) {
    boundNote.textContent = "This run kept no per-query results (run the compare benchmark with --html-queries > 0).";
  } else {
    const bound = data.bound;
    boundNote.textContent =
      "Sample of " + baseline + ": at most " + bound.max_queries + " queries (" + bound.per_stream + " per stream), top " +
      bound.depth + " results each, seed " + bound.seed + "; queries with false negatives and CxC-rated results first. " +
      "Every other variant recorded the same query ids. Moves (↑n / ↓n / new) and overlap@" + bound.depth +
      " are against " + baseline + ".";
  }

  // --- one column per variant ----------------------------------------------------------------
  function moveCell(move, position) {
    if (position === 0) return el("td", { className: "move", text: "" });
    if (move === null || move === undefined) return el("td", { className: "move new", "data-move": "new", text: "new" });
    if (move > 0) return el("td", { className: "move up", "data-move": String(move), text: "↑" + move });
    if (move < 0) return el("td", { className: "move down", "data-move": String(move), text: "↓" + -move });
    return el("td", { className: "move", "data-move": "0", text: "=" });
  }

  function column(entry, name, position) {
    const info = streamInfo.get(entry.stream) || {};
    const record = entry.variants[name];
    const box = el("div", { className: "variant-column", "data-testid": "variant-column", "data-variant": name }, [
      el("h3", { text: name + (position === 0 ? " (baseline)" : "") }),
    ]);
    if (!record) {
      box.appendChild(el("p", { className: "note", text: "This variant recorded no results for the query." }));
      return box;
    }
    if (position > 0) {
      const depth = (data.bound && data.bound.depth) || 10;
      box.appendChild(el("p", { className: "overlap", "data-testid": "overlap", "data-overlap": record.overlap,
        text: "overlap@" + depth + " with " + baseline + ": " + record.overlap + " of " + record.results.length }));
    }
    // The baseline has no moves: its column leaves the move column out.
    const moveHeader = position > 0 ? [el("th", { text: "move" })] : [];
    const header = el("tr", {}, [el("th", { className: "num", text: "rank" }), ...moveHeader, ...resultHeaders(info)]);
    const body = el("tbody", {});
    for (const result of record.results) {
      const row = el("tr", { "data-testid": "result-row", ...labelAttrs(result) }, [
        el("td", { className: "num", text: String(result.rank) }),
        ...(position > 0 ? [moveCell(result.move, position)] : []),
        ...resultCells(result, info),
      ]);
      if (isFalseNegative(entry.stream, result)) row.classList.add("false-negative");
      body.appendChild(row);
    }
    box.appendChild(el("div", { className: "table-wrap" }, [el("table", { className: "results" }, [el("thead", {}, [header]), body])]));
    return box;
  }

  const detail = document.getElementById("query-detail");
  const picker = queryList(entries, showQuery);

  function showQuery(stream, query) {
    const entry = entryByKey.get(recordKey(stream, query));
    if (!entry) return;
    detail.replaceChildren();
    detail.setAttribute("data-query-id", query);
    detail.setAttribute("data-stream", stream);
    detail.appendChild(queryHead(entry));
    detail.appendChild(el("div", { className: "variant-columns" }, variants.map((name, position) => column(entry, name, position))));
    detail.appendChild(falseNegativeNote(streamInfo.get(stream) || {}));
    picker.pick(recordKey(stream, query));
  }

  picker.render();
  const start = entryByKey.get(hashKey());
  if (start) showQuery(start.stream, start.query);
  else if (entries.length) showQuery(entries[0].stream, entries[0].query);
})();
