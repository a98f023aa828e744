// The memory inspector's page: calls the JSON API with the token of its own address and
// renders every value as text (never as HTML), so nothing a record says can run here.
"use strict";

const TOKEN = new URLSearchParams(location.search).get("token") || "";
const $ = (id) => document.getElementById(id);
let viewer = "";
let lastPanel = "search";

async function call(path, body) {
  const init = { headers: { "X-Memfuse-Token": TOKEN } };
  if (body !== undefined) {
    init.method = "POST";
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const response = await fetch(path, init);
  const value = await response.json();
  if (!response.ok) throw new Error(value.error || response.statusText);
  return value;
}

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (key === "class") node.className = value;
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value);
  }
  for (const child of children) {
    if (child === null || child === undefined) continue;
    node.append(typeof child === "string" || typeof child === "number" ? String(child) : child);
  }
  return node;
}

function showError(error) {
  $("error").textContent = String(error.message || error);
  $("error").hidden = false;
}

async function guarded(work) {
  $("error").hidden = true;
  try {
    await work();
  } catch (error) {
    showError(error);
  }
}

function show(panel) {
  for (const section of document.querySelectorAll(".panel")) section.hidden = section.id !== panel;
  for (const tab of document.querySelectorAll(".tab")) {
    tab.classList.toggle("active", tab.dataset.tab === panel);
  }
  if (panel !== "memory") lastPanel = panel;
}

// -- records ---------------------------------------------------------------------------

function trail(provenance) {
  return el("ul", { class: "trail" }, ...provenance.map((p) => el("li", {},
    `${p.source} · ${p.external_id} · ${p.user} · ${p.device} · ${p.ts}`)));
}

function forgetButton(record) {
  const own = (record.provenance || []).filter((p) => p.user === viewer);
  if (!own.length) return null;
  const ids = own.map((p) => p.observation_id);
  const box = el("span", { class: "forget-box" });
  const ask = el("button", { class: "forget", onclick: () => {
    box.replaceChildren(
      el("span", {}, "Forget this record everywhere? "),
      el("button", { class: "confirm-forget", onclick: () => guarded(async () => {
        const done = await call("/api/forget", { observation_ids: ids });
        box.replaceChildren(el("span", { class: "forgotten" },
          `forgotten (${done.events} event${done.events === 1 ? "" : "s"})`));
        box.closest("li").classList.add("gone");
      }) }, "Yes, forget"),
      el("button", { class: "cancel-forget", onclick: () => box.replaceChildren(ask) },
        "Cancel"));
  } }, "Forget");
  box.append(ask);
  return box;
}

function recordItem(record, extra = [], texts = new Map()) {
  const item = el("li", { "data-event-id": record.event_id },
    el("p", { class: "text" }, record.text));
  if (record.superseded_by && record.superseded_by.length) {
    item.classList.add("superseded");
    item.append(el("p", { class: "replaced" }, "replaced by record " +
      record.superseded_by.map((id) => (texts.has(id) ? `${id}: ${texts.get(id)}` : id))
        .join("; ")));
  }
  item.append(trail(record.provenance || []));
  const actions = el("p", { class: "actions" });
  if (record.fused_id !== null && record.fused_id !== undefined) {
    actions.append(el("button", { class: "open-memory", "data-fused-id": record.fused_id,
      onclick: () => openMemory(record.fused_id) }, `memory ${record.fused_id}`));
  }
  const forget = forgetButton(record);
  if (forget) actions.append(forget);
  item.append(actions, ...extra);
  return item;
}

// -- search and ask --------------------------------------------------------------------

$("search-form").addEventListener("submit", (event) => {
  event.preventDefault();
  guarded(async () => {
    const q = $("search-q").value.trim();
    if (!q) return;
    const params = new URLSearchParams({ q, pipeline: $("search-pipeline").value, k: "10" });
    const found = await call(`/api/search?${params}`);
    $("search-status").textContent = `${found.hits.length} records, ${found.latency_ms} ms`;
    $("search-hits").replaceChildren(...found.hits.map((hit) => recordItem(hit)));
    $("search-hits").dataset.query = q;
  });
});

$("ask-form").addEventListener("submit", (event) => {
  event.preventDefault();
  guarded(async () => {
    const question = $("ask-q").value.trim();
    if (!question) return;
    $("answer").hidden = false;
    $("answer-text").textContent = "…";
    const answer = await call("/api/ask", { question });
    $("answer-text").textContent = answer.answer;
    $("answer-mode").textContent = `${answer.mode} answer, ${answer.latency_ms} ms`;
    const byId = new Map(answer.evidence.map((h) => [h.event_id, h]));
    $("answer-citations").replaceChildren(...answer.citations.map((c) => recordItem(
      byId.get(c.event_id) || { event_id: c.event_id, text: "", provenance: c.provenance })));
  });
});

// -- timeline --------------------------------------------------------------------------

let nextCursor = null;
let lastGroup = null;

function groupOf(at, unit) {
  const day = at.slice(0, 10);
  if (unit === "day") return day;
  if (unit === "month") return day.slice(0, 7);
  const date = new Date(`${day}T00:00:00Z`);
  date.setUTCDate(date.getUTCDate() - ((date.getUTCDay() + 6) % 7));
  return `week of ${date.toISOString().slice(0, 10)}`;
}

function card(c) {
  const open = c.fused_id !== null
    ? () => openMemory(c.fused_id) : () => openEvent(c.event_id);
  return el("article", { class: "card", "data-fused-id": c.fused_id ?? "" },
    el("button", { class: "open-card", onclick: open }, c.summary || "(no text)"),
    el("p", { class: "muted" }, `${c.at} · ${c.members} record${c.members === 1 ? "" : "s"}` +
      ` · ${c.sources.join(", ")} · ${c.users.join(", ")}` +
      (c.conflicts ? ` · ${c.conflicts} conflict${c.conflicts === 1 ? "" : "s"}` : "")));
}

async function loadTimeline(reset) {
  const unit = $("timeline-unit").value;
  const params = new URLSearchParams();
  if (reset) {
    lastGroup = null;
    $("timeline-cards").replaceChildren();
    const date = $("timeline-date").value;
    if (date) params.set("before", `${date}T23:59:59`);
  } else if (nextCursor) {
    params.set("before", nextCursor);
  }
  const page = await call(`/api/timeline?${params}`);
  for (const c of page.cards) {
    const group = groupOf(c.at, unit);
    if (group !== lastGroup) {
      $("timeline-cards").append(el("h3", { class: "group" }, group));
      lastGroup = group;
    }
    $("timeline-cards").append(card(c));
  }
  nextCursor = page.next;
  $("timeline-more").hidden = !nextCursor;
}

$("timeline-form").addEventListener("submit", (event) => {
  event.preventDefault();
  guarded(() => loadTimeline(true));
});
$("timeline-more").addEventListener("click", () => guarded(() => loadTimeline(false)));

// -- one memory ------------------------------------------------------------------------

const SVG = "http://www.w3.org/2000/svg";

function svg(tag, attrs, text) {
  const node = document.createElementNS(SVG, tag);
  for (const [key, value] of Object.entries(attrs)) node.setAttribute(key, value);
  if (text !== undefined) {
    const title = document.createElementNS(SVG, "title");
    title.textContent = text;
    node.append(title);
  }
  return node;
}

function drawGraph(members, edges) {
  const graph = $("memory-graph");
  const step = 90;
  const width = Math.max(200, step * members.length + 40);
  graph.setAttribute("viewBox", `0 0 ${width} 150`);
  graph.setAttribute("width", width);
  graph.replaceChildren();
  const x = new Map(members.map((m, i) => [m.event_id, 40 + i * step]));
  const drawn = new Map();  // edges between one pair so far: each arc a little higher
  for (const e of edges) {
    if (!x.has(e.src) || !x.has(e.dst)) continue;
    const [a, b] = [x.get(e.src), x.get(e.dst)];
    const pair = [e.src, e.dst].sort().join("-");
    drawn.set(pair, (drawn.get(pair) || 0) + 1);
    const lift = 10 + Math.abs(b - a) / 3 + 14 * drawn.get(pair);
    graph.append(svg("path", { d: `M ${a} 100 Q ${(a + b) / 2} ${100 - lift} ${b} 100`,
      class: `edge ${e.kind}`, "data-kind": e.kind, "data-src": e.src, "data-dst": e.dst }, `${e.kind}: ${e.src} → ${e.dst} ${e.reason || ""}`));
  }
  for (const m of members) {
    const node = svg("g", { class: `node${m.superseded_by.length ? " superseded" : ""}`,
      "data-event-id": m.event_id }, `${m.source}/${m.user}: ${m.text}`);
    node.append(svg("circle", { cx: x.get(m.event_id), cy: 100, r: 12 }));
    const label = svg("text", { x: x.get(m.event_id), y: 132, "text-anchor": "middle" });
    label.textContent = m.source;
    node.append(label);
    graph.append(node);
  }
}

function links(list) {
  if (!list.length) return [];
  return [el("ul", { class: "links" }, ...list.map((l) => el("li", {},
    el("button", { class: "follow", "data-kind": l.kind, "data-fused-id": l.fused_id ?? "",
      "data-event-id": l.event_id,
      onclick: () => (l.fused_id !== null ? openMemory(l.fused_id) : openEvent(l.event_id)) },
    `${l.kind} ${l.src === l.event_id ? "from" : "to"} ${l.source}/${l.user}: ${l.text}`))))];
}

async function openMemory(fusedId) {
  await guarded(async () => {
    const memory = await call(`/api/fused/${fusedId}`);
    show("memory");
    $("memory").dataset.fusedId = fusedId;
    $("memory-summary").textContent = memory.summary;
    $("memory-span").textContent = `memory ${memory.fused_id} · ${memory.start || "?"} – ` +
      `${memory.end || "?"} · sources: ${memory.sources.join(", ")} · ` +
      `people: ${memory.participants.join(", ")}`;
    drawGraph(memory.members, memory.edges);
    const texts = new Map(memory.members.map((m) => [m.event_id, `${m.source}/${m.user}: ${m.text}`]));
    $("memory-members").replaceChildren(...memory.members.map((m) => recordItem(
      { ...m, fused_id: null }, links(m.links), texts)));
  });
}

async function openEvent(eventId) {
  await guarded(async () => {
    const event = await call(`/api/event/${eventId}`);
    if (event.fused_id !== null) return openMemory(event.fused_id);
    show("memory");
    $("memory-summary").textContent = event.text;
    $("memory-span").textContent = `record ${event.event_id} · ${event.ts}`;
    drawGraph([], []);
    $("memory-members").replaceChildren(recordItem({ ...event, fused_id: null },
      links(event.links)));
  });
}

$("memory-back").addEventListener("click", () => show(lastPanel));

// -- stats -----------------------------------------------------------------------------

async function loadStats() {
  const stats = await call("/api/stats");
  const rows = [["viewer", stats.viewer], ["role", stats.role], ["time zone", stats.time_zone],
    ["embedder", stats.embedder], ["queued", stats.queued], ["failed", stats.failed],
    ["dense index", `${stats.indexes.dense.size} vectors`],
    ["text index", `${stats.indexes.text.size} events`]];
  $("stats-state").replaceChildren(...rows.flatMap(([k, v]) => [el("dt", {}, k),
    el("dd", {}, String(v))]));
  $("stats-records").tBodies[0].replaceChildren(...stats.records.map((r) => {
    const cell = el("td");
    if (r.user === viewer) {
      cell.append(el("button", { class: "forget-source", "data-source": r.source, onclick: () => {
        cell.replaceChildren(el("span", {}, `Forget all your ${r.source} records? `),
          el("button", { class: "confirm-forget", onclick: () => guarded(async () => {
            await call("/api/forget", { source: r.source });
            await loadStats();
          }) }, "Yes, forget"),
          el("button", { class: "cancel-forget", onclick: loadStats }, "Cancel"));
      } }, "Forget source"));
    }
    return el("tr", { "data-source": r.source, "data-user": r.user },
      el("td", {}, r.source), el("td", {}, r.user), el("td", {}, r.events), cell);
  }));
}

// -- start -----------------------------------------------------------------------------

for (const tab of document.querySelectorAll(".tab")) {
  tab.addEventListener("click", () => {
    show(tab.dataset.tab);
    if (tab.dataset.tab === "stats") guarded(loadStats);
    if (tab.dataset.tab === "timeline" && !$("timeline-cards").children.length) {
      guarded(() => loadTimeline(true));
    }
  });
}

guarded(async () => {
  const stats = await call("/api/stats");
  viewer = stats.viewer;
  $("who").textContent = `as ${viewer}`;
  document.body.dataset.ready = "1";
});
