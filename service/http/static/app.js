// The Crisscross search page: plain JavaScript, no framework, no network beyond this service.
// Data from the API is put into the page with textContent and attributes only, never as HTML.
"use strict";

(() => {
  const $ = (id) => document.getElementById(id);
  const form = $("search-form");
  const textInput = $("query-text");
  const fileInput = $("query-image");
  const dropZone = $("drop-zone");
  const imageName = $("image-name");
  const clearImage = $("clear-image");
  const itemQueryLine = $("item-query");
  const variantSelect = $("variant");
  const variantInfo = $("variant-info");
  const collectionSelect = $("collection");
  const compareOn = $("compare-on");
  const compareSelect = $("compare-collection");
  const kSelect = $("k");
  const filterField = $("filter-field");
  const filterOp = $("filter-op");
  const filterValue = $("filter-value");
  const keyInput = $("api-key");
  const statusLine = $("status");
  const errorBox = $("error");
  const results = $("results");
  const prevButton = $("prev-page");
  const nextButton = $("next-page");
  const pageLabel = $("page-label");
  const liveRow = $("live-row");
  const addId = $("add-id");
  const addText = $("add-text");
  const addMetadata = $("add-metadata");
  const addButton = $("add-button");

  const state = {
    collections: [], // from GET /v1/collections
    variants: [], // from GET /v1/variants
    image: null, // a File
    item: null, // {collection, id}: "more like this"
    offset: 0,
    blobUrls: [],
  };

  function headers(extra) {
    const all = Object.assign({}, extra || {});
    const key = keyInput.value.trim();
    if (key) all.Authorization = "Bearer " + key;
    return all;
  }

  class ApiError extends Error {
    constructor(status, code, message) {
      super(message);
      this.status = status;
      this.code = code;
    }
  }

  async function api(path, options) {
    const response = await fetch(path, Object.assign({}, options, {
      headers: headers((options && options.headers) || {}),
    }));
    let body = null;
    try {
      body = await response.json();
    } catch (_) {
      body = null;
    }
    if (!response.ok) {
      const error = (body && body.error) || {};
      throw new ApiError(response.status, error.code || "error", error.message || response.statusText);
    }
    const replica = response.headers.get("x-replica");
    if (replica && body && typeof body === "object" && !Array.isArray(body)) {
      // Which server answered, for a collection served by several (its URL, role and term).
      Object.defineProperty(body, "answeredBy", { value: replica, enumerable: false });
    }
    return body;
  }

  function showError(error) {
    errorBox.hidden = false;
    if (error instanceof ApiError) {
      const hint = error.status === 401 || error.status === 403
        ? " Enter an API key above and search again." : "";
      errorBox.textContent = `${error.status} ${error.code}: ${error.message}${hint}`;
    } else {
      errorBox.textContent = String(error && error.message ? error.message : error);
    }
  }

  function clearError() {
    errorBox.hidden = true;
    errorBox.textContent = "";
  }

  function option(value, label) {
    const element = document.createElement("option");
    element.value = value;
    element.textContent = label;
    return element;
  }

  function collectionByName(name) {
    return state.collections.find((c) => c.qualified_name === name);
  }

  async function loadCatalog() {
    const [collections, variants] = await Promise.all([
      api("/v1/collections"),
      api("/v1/variants"),
    ]);
    // Live collections (writable, named by their plain name) are listed after the bundles'.
    const live = (collections.live || []).map((c) => ({
      name: c.name,
      qualified_name: c.name,
      variant: c.variant,
      count: c.count,
      fields: c.fields,
      thumbnails: false,
      live: true,
    }));
    state.collections = collections.collections.concat(live);
    state.variants = variants.variants;
    const chosenVariant = variantSelect.value;
    variantSelect.replaceChildren(option("", "(any)"));
    for (const v of state.variants) {
      variantSelect.append(option(v.name, `${v.name} (${v.towers.join(" + ")})`));
    }
    if (state.variants.some((v) => v.name === chosenVariant)) variantSelect.value = chosenVariant;
    fillCollections();
    statusLine.textContent = `${state.collections.length} collections served by `
      + `${state.variants.length} variants.`;
  }

  function fillCollections() {
    // The collections of the chosen variant (all without one); compare may take any.
    const current = collectionSelect.value;
    const compareCurrent = compareSelect.value;
    collectionSelect.replaceChildren();
    compareSelect.replaceChildren();
    for (const c of state.collections) {
      const label = `${c.qualified_name} · ${c.variant || "client vectors"} · ${c.count} items`
        + (c.live ? " · live" : "");
      if (!variantSelect.value || c.variant === variantSelect.value) {
        collectionSelect.append(option(c.qualified_name, label));
      }
      compareSelect.append(option(c.qualified_name, label));
    }
    if ([...collectionSelect.options].some((o) => o.value === current)) {
      collectionSelect.value = current;
    }
    if (collectionByName(compareCurrent)) compareSelect.value = compareCurrent;
    else if (state.collections.length > 1) compareSelect.selectedIndex = 1;
    collectionChanged();
  }

  function collectionChanged() {
    fillFilterFields();
    const collection = collectionByName(collectionSelect.value);
    const variant = collection && state.variants.find((v) => v.name === collection.variant);
    const images = Boolean(variant && variant.towers.includes("image"));
    const texts = Boolean(variant && variant.towers.includes("text"));
    liveRow.hidden = !(collection && collection.live && texts);
    fileInput.disabled = !images;
    dropZone.setAttribute("aria-disabled", String(!images));
    variantInfo.textContent = variant
      ? `${variant.name}: ${variant.towers.join(" + ")} tower${variant.towers.length > 1 ? "s" : ""}, `
        + `dim ${variant.dim}, ${variant.precision}, on ${variant.providers.join(", ")}`
        + (images ? "" : " (no image tower: image queries are off)")
      : "";
  }

  function fillFilterFields() {
    const chosen = collectionByName(collectionSelect.value);
    const previous = filterField.value;
    filterField.replaceChildren(option("", "(none)"));
    const fields = chosen ? Object.entries(chosen.fields) : [];
    for (const [name, type] of fields) filterField.append(option(name, `${name} (${type})`));
    filterField.disabled = fields.length === 0;
    filterOp.disabled = filterValue.disabled = fields.length === 0;
    if (fields.some(([name]) => name === previous)) filterField.value = previous;
  }

  function typedValue(type, raw) {
    if (type === "integer") {
      const value = Number(raw);
      if (!Number.isInteger(value)) throw new Error(`'${raw}' is not an integer`);
      return value;
    }
    if (type === "float") {
      const value = Number(raw);
      if (!Number.isFinite(value)) throw new Error(`'${raw}' is not a number`);
      return value;
    }
    if (type === "boolean") {
      if (raw !== "true" && raw !== "false") throw new Error("a boolean is true or false");
      return raw === "true";
    }
    return raw;
  }

  function currentFilter(collection) {
    const name = filterField.value;
    if (!name || !collection) return null;
    const type = collection.fields[name];
    if (type === undefined) return null;
    const raw = filterValue.value.trim();
    if (raw === "") throw new Error(`give a value for the filter on '${name}'`);
    if (filterOp.value === "eq") {
      if (type === "list[string]") return { field: name, in: [raw] };
      return { field: name, eq: typedValue(type, raw) };
    }
    const range = {};
    range[filterOp.value] = type === "timestamp" ? raw : typedValue(type, raw);
    return { field: name, range };
  }

  function fileToBase64(file) {
    return new Promise((resolve, reject) => {
      const reader = new FileReader();
      reader.onload = () => resolve(String(reader.result).split(",", 2)[1]);
      reader.onerror = () => reject(reader.error);
      reader.readAsDataURL(file);
    });
  }

  async function searchOne(collectionName, k, offset, filter) {
    if (state.image && !filter && offset === 0) {
      const body = new FormData();
      body.append("file", state.image, state.image.name || "image");
      body.append("collection", collectionName);
      body.append("k", String(k));
      return api("/v1/search/upload", { method: "POST", body });
    }
    let query;
    if (state.item) query = { item: state.item };
    else if (state.image) query = { image: await fileToBase64(state.image) };
    else query = { text: textInput.value };
    const request = { query, collection: collectionName, k, offset };
    if (filter) request.filter = filter;
    return api("/v1/search", {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify(request),
    });
  }

  function releaseBlobs() {
    for (const url of state.blobUrls) URL.revokeObjectURL(url);
    state.blobUrls = [];
  }

  async function showThumbnail(img, collection, id) {
    try {
      const response = await fetch(
        `/v1/thumbnails/${encodeURIComponent(collection)}/${encodeURIComponent(id)}`,
        { headers: headers() },
      );
      if (!response.ok) return;
      const url = URL.createObjectURL(await response.blob());
      state.blobUrls.push(url);
      img.src = url;
    } catch (_) {
      // the caption line below the image still says what it is
    }
  }

  function captionOf(hit) {
    // A text item's own text; an image item has none (its metadata is one click away).
    const metadata = hit.metadata || {};
    return typeof metadata.text === "string" ? metadata.text : "";
  }

  function renderHit(hit, collection, movement) {
    const item = document.createElement("li");
    item.className = "hit";
    item.dataset.id = hit.id;
    item.dataset.rank = String(hit.rank);
    if (collection.thumbnails) {
      const img = document.createElement("img");
      img.alt = `image ${hit.id}`;
      img.className = "thumbnail";
      item.append(img);
      showThumbnail(img, collection.qualified_name, hit.id);
    }
    const caption = captionOf(hit);
    if (caption || !collection.thumbnails) {
      const text = document.createElement("p");
      text.className = "caption";
      text.textContent = caption || hit.id;
      item.append(text);
    }
    const line = document.createElement("div");
    line.className = "meta-line";
    const rank = document.createElement("span");
    rank.className = "rank";
    rank.textContent = `#${hit.rank}`;
    const score = document.createElement("span");
    score.className = "score";
    score.textContent = hit.score.toFixed(4);
    line.append(rank, score);
    item.append(line);
    if (movement) {
      const moved = document.createElement("span");
      moved.className = `moved ${movement.kind}`;
      moved.textContent = movement.label;
      item.append(moved);
    }
    const id = document.createElement("span");
    id.className = "hit-id";
    id.textContent = hit.id;
    item.append(id);
    const details = document.createElement("details");
    const summary = document.createElement("summary");
    summary.textContent = "metadata";
    const pre = document.createElement("pre");
    pre.textContent = JSON.stringify(hit.metadata, null, 1);
    details.append(summary, pre);
    item.append(details);
    const more = document.createElement("button");
    more.type = "button";
    more.className = "more-like-this";
    more.textContent = "More like this";
    more.addEventListener("click", () => {
      setItemQuery({ collection: collection.qualified_name, id: hit.id });
      run(0);
    });
    item.append(more);
    if (collection.live) {
      const remove = document.createElement("button");
      remove.type = "button";
      remove.className = "delete-item";
      remove.textContent = "Delete";
      remove.addEventListener("click", () => deleteItem(collection.name, hit.id));
      item.append(remove);
    }
    return item;
  }

  function renderColumn(answer, collection, movements) {
    const column = document.createElement("div");
    column.className = "column";
    column.dataset.collection = collection.qualified_name;
    const title = document.createElement("h2");
    title.textContent = `${collection.qualified_name} (${answer.variant})`;
    const t = answer.timings_ms;
    const timings = document.createElement("p");
    timings.className = "timings";
    timings.textContent = `decode ${t.decode.toFixed(1)} ms · queue ${t.queue.toFixed(1)} ms · `
      + `encode ${t.encode.toFixed(1)} ms · search ${t.search.toFixed(1)} ms · `
      + `total ${t.total.toFixed(1)} ms`
      + (answer.answeredBy ? ` · answered by ${answer.answeredBy}` : "");
    const list = document.createElement("ol");
    list.className = "grid";
    for (const hit of answer.results) {
      list.append(renderHit(hit, collection, movements ? movements.get(hit.id) : null));
    }
    column.append(title, timings, list);
    return column;
  }

  function compareMovements(left, right) {
    // Where each of right's results stood in left's list, and which of left's right lost.
    const leftRanks = new Map(left.results.map((hit) => [hit.id, hit.rank]));
    const rightRanks = new Map(right.results.map((hit) => [hit.id, hit.rank]));
    const forRight = new Map();
    for (const hit of right.results) {
      const before = leftRanks.get(hit.id);
      if (before === undefined) forRight.set(hit.id, { kind: "new", label: "new here" });
      else if (before === hit.rank) forRight.set(hit.id, { kind: "same", label: "same rank" });
      else {
        const delta = before - hit.rank;
        const arrow = delta > 0 ? `↑${delta}` : `↓${-delta}`;
        forRight.set(hit.id, { kind: "moved", label: `${arrow} (was #${before})` });
      }
    }
    const forLeft = new Map();
    for (const hit of left.results) {
      if (!rightRanks.has(hit.id)) forLeft.set(hit.id, { kind: "gone", label: "not in the other" });
    }
    const shared = left.results.filter((hit) => rightRanks.has(hit.id)).length;
    return { forLeft, forRight, shared };
  }

  function setItemQuery(item) {
    state.item = item;
    itemQueryLine.hidden = !item;
    itemQueryLine.textContent = item ? `More like ${item.id} (${item.collection})` : "";
    if (item) {
      textInput.value = "";
      setImage(null);
    }
  }

  function setImage(file) {
    if (file && fileInput.disabled) {
      showError(new Error("the chosen collection's variant has no image tower"));
      return;
    }
    state.image = file;
    imageName.textContent = file ? file.name || "pasted image" : "";
    clearImage.hidden = !file;
    if (!file) fileInput.value = "";
    else {
      state.item = null;
      itemQueryLine.hidden = true;
    }
  }

  function collectionPath(name) {
    return `/v1/collections/${encodeURIComponent(name)}`;
  }

  async function afterWrite(message) {
    // A write answered 200 is already searchable: refresh the counts and search again.
    await loadCatalog();
    if (state.item || textInput.value.trim() !== "" || state.image) await run(state.offset);
    statusLine.textContent = message + " " + statusLine.textContent;
  }

  async function addItem() {
    clearError();
    try {
      const collection = collectionByName(collectionSelect.value);
      if (!collection || !collection.live) throw new Error("choose a live collection first");
      const id = addId.value.trim();
      const text = addText.value.trim();
      if (!id || !text) throw new Error("an item needs an id and a text");
      const raw = addMetadata.value.trim();
      let metadata = {};
      if (raw) {
        try {
          metadata = JSON.parse(raw);
        } catch (_) {
          throw new Error("metadata must be a JSON object, e.g. {\"topic\": \"pets\"}");
        }
      }
      const answer = await api(`${collectionPath(collection.name)}/items`, {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ items: [{ id, text, metadata }] }),
      });
      addId.value = addText.value = addMetadata.value = "";
      await afterWrite(`Added ${id} (write ${answer.seq}).`);
    } catch (error) {
      showError(error);
    }
  }

  async function deleteItem(name, id) {
    clearError();
    try {
      const answer = await api(`${collectionPath(name)}/items/delete`, {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ ids: [id] }),
      });
      if (state.item && state.item.id === id) setItemQuery(null);
      await afterWrite(`Deleted ${id} (write ${answer.seq}).`);
    } catch (error) {
      showError(error);
    }
  }

  async function run(offset) {
    clearError();
    releaseBlobs();
    try {
      if (state.collections.length === 0) await loadCatalog();
      const k = Number(kSelect.value);
      const collection = collectionByName(collectionSelect.value);
      if (!collection) throw new Error("no collection is served");
      if (!state.item && !state.image && textInput.value.trim() === "") {
        throw new Error("type a text, choose an image, or pick 'More like this' on a result");
      }
      const filter = currentFilter(collection);
      statusLine.textContent = "Searching…";
      const started = performance.now();
      const other = compareOn.checked ? collectionByName(compareSelect.value) : null;
      const answers = await Promise.all(
        [collection, other].filter(Boolean).map(
          // The filter goes to the compared collection too when it has that field.
          (c) => searchOne(
            c.qualified_name, k, offset, filter && filter.field in c.fields ? filter : null,
          ),
        ),
      );
      const elapsed = performance.now() - started;
      state.offset = offset;
      results.replaceChildren();
      results.classList.toggle("compare", Boolean(other));
      if (other) {
        const moves = compareMovements(answers[0], answers[1]);
        const overlap = document.createElement("p");
        overlap.className = "overlap";
        overlap.id = "overlap";
        overlap.textContent = `overlap@${k}: ${(moves.shared / k).toFixed(2)} `
          + `(${moves.shared} of ${k} results in both)`;
        results.append(
          overlap,
          renderColumn(answers[0], collection, moves.forLeft),
          renderColumn(answers[1], other, moves.forRight),
        );
      } else {
        results.append(renderColumn(answers[0], collection, null));
      }
      const count = answers[0].results.length;
      statusLine.textContent = `${count} results in ${elapsed.toFixed(0)} ms (round trip).`;
      pageLabel.textContent = count ? `results ${offset + 1}–${offset + count}` : "";
      prevButton.disabled = offset === 0;
      nextButton.disabled = count < k;
    } catch (error) {
      statusLine.textContent = "";
      showError(error);
    }
  }

  form.addEventListener("submit", (event) => {
    event.preventDefault();
    run(0);
  });
  prevButton.addEventListener("click", () => run(Math.max(0, state.offset - Number(kSelect.value))));
  nextButton.addEventListener("click", () => run(state.offset + Number(kSelect.value)));
  textInput.addEventListener("input", () => {
    if (state.item) setItemQuery(null);
  });
  collectionSelect.addEventListener("change", collectionChanged);
  variantSelect.addEventListener("change", fillCollections);
  compareOn.addEventListener("change", () => {
    compareSelect.disabled = !compareOn.checked;
  });
  fileInput.addEventListener("change", () => setImage(fileInput.files[0] || null));
  clearImage.addEventListener("click", () => setImage(null));
  addButton.addEventListener("click", addItem);
  dropZone.addEventListener("keydown", (event) => {
    if (event.key === "Enter" || event.key === " ") {
      event.preventDefault();
      fileInput.click();
    }
  });
  dropZone.addEventListener("dragover", (event) => {
    event.preventDefault();
    dropZone.classList.add("over");
  });
  dropZone.addEventListener("dragleave", () => dropZone.classList.remove("over"));
  dropZone.addEventListener("drop", (event) => {
    event.preventDefault();
    dropZone.classList.remove("over");
    const file = event.dataTransfer && event.dataTransfer.files[0];
    if (file) setImage(file);
  });
  document.addEventListener("paste", (event) => {
    const files = event.clipboardData ? Array.from(event.clipboardData.files) : [];
    const image = files.find((file) => file.type.startsWith("image/"));
    if (image) setImage(image);
  });

  loadCatalog().catch((error) => {
    statusLine.textContent = "";
    showError(error);
  });
})();
