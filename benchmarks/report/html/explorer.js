// What report.html's and compare.html's query explorers share: building elements, formatting
// numbers, thumbnails, caption texts, result labels and the filterable query list.
// Every piece of data goes in through textContent or a property (no HTML parsing of data),
// image sources only when they are data:image/ URIs.
"use strict";

// data: {thumbnails, captions, streams}; returns the helpers bound to that data.
function crisscrossExplorer(data) {
  const thumbs = data.thumbnails || {};
  const captions = data.captions || {};
  const streams = data.streams || [];
  const streamInfo = new Map(streams.map((stream) => [stream.name, stream]));
  const recordKey = (stream, query) => stream + "\u0000" + query;

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

  function queryLabel(record) {
    return record.query_kind === "caption" ? textOf(record.query) : record.query;
  }

  function humanHeader(info) {
    return info.human_ratings ? "CxC " + info.human_ratings.toUpperCase() + " (0–5)" : "CxC (not loaded)";
  }

  // The cells of one result row after its rank: item, score, human score, MS-COCO, CIDEr-D.
  function resultCells(result, info) {
    return [
      el("td", {}, [itemCell(result.id, info.target_kind)]),
      el("td", { className: "num", text: fmt(result.score, 4) }),
      el("td", { className: "num", text: fmt(result.human, 2) }),
      el("td", {}, [info.coco_labels ? cocoCell(result.coco) : el("span", { className: "unknown", text: "n/a" })]),
      el("td", { className: "num", text: info.cider ? fmt(result.cider, 3) : "n/a" }),
    ];
  }

  function resultHeaders(info) {
    return [
      el("th", { text: info.target_kind === "image" ? "image" : "caption" }),
      el("th", { className: "num", text: "score" }),
      el("th", { className: "num", text: humanHeader(info) }),
      el("th", { text: "MS-COCO" }),
      el("th", { className: "num", text: "CIDEr-D" }),
    ];
  }

  function falseNegativeNote(info) {
    return el("p", {
      className: "note",
      text: "Highlighted: MS-COCO counts the result wrong but CxC rates it ≥ " + fmt(info.human_threshold, 1) + ". " +
        "“–”: CxC did not rate the pair. n/a: not defined for this stream.",
    });
  }

  // A query's heading: its thumbnail (image queries), text, stream and id.
  function queryHead(record) {
    const head = el("div", { className: "query-head" });
    if (record.query_kind === "image") {
      const img = thumbnail(record.query);
      if (img) head.appendChild(img);
    }
    head.appendChild(
      el("div", {}, [
        el("div", { className: "text", "data-testid": "query-text", text: queryLabel(record) }),
        el("div", { className: "qid", text: record.stream + " · " + record.query + (record.cxc_rated ? " · rated by CxC" : "") }),
      ]),
    );
    return head;
  }

  // The stream select, search box and list of records; onPick(stream, query) when one is clicked.
  // badges(record) → extra elements after the stream badge. Returns {render, select(key)}.
  function queryList(records, onPick, badges) {
    const select = document.getElementById("stream-select");
    const search = document.getElementById("query-search");
    const list = document.getElementById("query-list");
    const count = document.getElementById("query-count");
    let selected = null;
    select.appendChild(el("option", { value: "", text: "all streams" }));
    for (const stream of streams) {
      select.appendChild(el("option", { value: stream.name, text: stream.name + " (" + stream.shown + ")" }));
    }

    function render() {
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
            ...(badges ? badges(record) : []),
            document.createTextNode(" " + (record.query_kind === "caption" ? label : "")),
            el("span", { className: "qid", text: record.query }),
          ],
        );
        button.addEventListener("click", () => onPick(record.stream, record.query));
        list.appendChild(el("li", {}, [button]));
      }
      count.textContent = shown + " of " + records.length + " queries";
    }

    search.addEventListener("input", render);
    select.addEventListener("change", render);
    return {
      render: render,
      pick(key) {
        selected = key;
        render();
      },
      reset() {
        select.value = "";
        search.value = "";
      },
    };
  }

  // "#query=<stream>/<query id>" (URI-encoded): the record key it names, else null.
  function hashKey() {
    const wanted = /^#query=([^/]*)\/(.*)$/.exec(location.hash);
    return wanted ? recordKey(decodeURIComponent(wanted[1]), decodeURIComponent(wanted[2])) : null;
  }

  return {
    el, fmt, thumbnail, textOf, itemCell, cocoCell, labelAttrs, isFalseNegative, queryLabel,
    resultCells, resultHeaders, falseNegativeNote, queryHead, queryList, hashKey, recordKey, streamInfo,
  };
}
