// Vigil's page: the cameras' grid (live), and one camera's day (timeline, player, clip, stills).
// Plain JavaScript over the JSON API (/api/v1); no build step, nothing from elsewhere.
"use strict";

const $ = (id) => document.getElementById(id);
const api = "/api/v1";
const view = { camera: null, day: null, span: 3600, end: null, recordings: [], playing: null, drag: null };
let gridTimer = null, dayTimer = null;

// ---- Fetching ----

class Unauthorized extends Error {}

async function getJSON(path) {
  const response = await fetch(path, { credentials: "same-origin", headers: { Accept: "application/json" } });
  if (response.status === 401) throw new Unauthorized();
  if (!response.ok) {
    let message = `${response.status} ${response.statusText}`;
    try { message = (await response.json()).error || message; } catch {}
    const error = new Error(message);
    error.status = response.status;
    throw error;
  }
  return response.json();
}

function showError(error) {
  if (error instanceof Unauthorized) return showLogin();
  $("error").textContent = String(error.message || error);
  $("error").hidden = false;
}

function clearError() { $("error").hidden = true; }

function showLogin() {
  stopLive();
  for (const id of ["grid", "day"]) $(id).hidden = true;
  $("login").hidden = false;
}

// ---- Time ----

const pad = (n) => String(n).padStart(2, "0");
const clock = (d) => `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
const dayKey = (d) => `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}`;
const query = (from, to) => `from=${encodeURIComponent(from.toISOString())}&to=${encodeURIComponent(to.toISOString())}`;

function duration(ms) {
  const s = Math.round(ms / 1000);
  return s >= 3600 ? `${Math.floor(s / 3600)} h ${pad(Math.floor(s % 3600 / 60))} min` : `${Math.floor(s / 60)} min ${pad(s % 60)} s`;
}

// ---- The grid of cameras ----

function stopLive() {
  // Leaving the grid closes the live streams: each is one of the server's capped live clients.
  for (const img of document.querySelectorAll("#grid img")) img.removeAttribute("src");
  $("grid").replaceChildren();
  clearInterval(gridTimer);
}

function facts(camera) {
  const parts = [];
  if (camera.width && camera.height) parts.push(`${camera.width}×${camera.height}`);
  if (camera.codec) parts.push(camera.codec);
  if (camera.fps != null) parts.push(`${Number(camera.fps).toFixed(1)} fps`);
  parts.push(`${camera.frames ?? 0} frames`);
  if (camera.dropped) parts.push(`${camera.dropped} dropped`);
  if (camera.last_frame_age_seconds != null && camera.last_frame_age_seconds > 2) parts.push(`last frame ${Math.round(camera.last_frame_age_seconds)} s ago`);
  return parts.join(" · ");
}

function cameraCard(camera) {
  const card = document.createElement("article");
  card.className = "camera";
  card.dataset.camera = camera.name;
  card.tabIndex = 0;
  const img = document.createElement("img");
  img.alt = `${camera.name}, live`;
  img.src = camera.live_mjpeg || camera.snapshot;
  // A stream that ends (camera lost, server restarted, viewer cap) is tried again later.
  img.onerror = () => setTimeout(() => { if (img.isConnected) img.src = `${camera.live_mjpeg || camera.snapshot}?retry=${Date.now()}`; }, 3000);
  const info = document.createElement("div");
  info.className = "info";
  info.innerHTML = `<span class="name"></span><span class="state"></span><span class="facts"></span>`;
  card.append(img, info);
  const open = () => { location.hash = `#camera/${encodeURIComponent(camera.name)}`; };
  card.addEventListener("click", open);
  card.addEventListener("keydown", (e) => { if (e.key === "Enter") open(); });
  updateCard(card, camera);
  return card;
}

function updateCard(card, camera) {
  card.querySelector(".name").textContent = camera.name;
  const state = card.querySelector(".state");
  state.textContent = camera.state;
  state.className = `state ${camera.state}`;
  card.querySelector(".facts").textContent = facts(camera);
}

async function refreshGrid() {
  try {
    const { cameras } = await getJSON(`${api}/cameras`);
    clearError();
    const grid = $("grid");
    const cards = new Map([...grid.children].map((c) => [c.dataset.camera, c]));
    for (const camera of cameras) {
      const card = cards.get(camera.name);
      if (card) { updateCard(card, camera); cards.delete(camera.name); } else grid.append(cameraCard(camera));
    }
    for (const gone of cards.values()) gone.remove();
    const recording = cameras.filter((c) => c.state === "recording").length;
    $("summary").textContent = `${cameras.length} camera(s), ${recording} recording`;
    if (!cameras.length) grid.textContent = "No camera is configured.";
  } catch (error) { showError(error); }
}

function showGrid() {
  clearInterval(dayTimer);
  $("player").pause();
  for (const id of ["login", "day"]) $(id).hidden = true;
  $("grid").hidden = false;
  refreshGrid();
  clearInterval(gridTimer);
  gridTimer = setInterval(refreshGrid, 2000);
}

// ---- One camera's day ----

function windowBounds() {
  const end = view.end;
  return { from: new Date(end.getTime() - view.span * 1000), to: end };
}

function position(time, bounds) {
  return (time - bounds.from) / (bounds.to - bounds.from) * 100;
}

function place(element, start, end, bounds) {
  const left = Math.max(0, position(start, bounds)), right = Math.min(100, position(end, bounds));
  element.style.left = `${left}%`;
  element.style.width = `${Math.max(0, right - left)}%`;
  return right > 0 && left < 100;
}

function drawTicks(bounds) {
  const ticks = $("ticks");
  ticks.replaceChildren();
  const steps = [60, 300, 600, 1800, 3600, 7200, 10800];
  const step = (steps.find((s) => view.span / s <= 8) || 10800) * 1000;
  for (let t = Math.ceil(bounds.from / step) * step; t <= bounds.to; t += step) {
    const span = document.createElement("span");
    span.style.left = `${position(t, bounds)}%`;
    span.textContent = clock(new Date(t)).slice(0, 5);
    ticks.append(span);
  }
}

async function loadDay() {
  const camera = view.camera, bounds = windowBounds();
  try {
    const [recordings, stills, events] = await Promise.all([
      getJSON(`${api}/cameras/${encodeURIComponent(camera)}/recordings?${query(bounds.from, bounds.to)}`),
      getJSON(`${api}/cameras/${encodeURIComponent(camera)}/stills?${query(bounds.from, bounds.to)}`),
      // Motion events are there only where motion detection is switched on.
      getJSON(`${api}/cameras/${encodeURIComponent(camera)}/events?${query(bounds.from, bounds.to)}`).catch(() => ({ events: [] })),
    ]);
    if (camera !== view.camera) return;
    clearError();
    view.recordings = recordings.recordings.map((r) => ({ ...r, from: Date.parse(r.start), until: Date.parse(r.end) }));
    const lanes = $("lanes");
    lanes.replaceChildren();
    for (const r of view.recordings) {
      const div = document.createElement("div");
      div.className = "segment";
      div.dataset.id = r.id;
      div.title = `${clock(new Date(r.from))}–${clock(new Date(r.until))}`;
      if (place(div, r.from, r.until, bounds)) lanes.append(div);
    }
    for (const g of recordings.gaps || []) {
      const div = document.createElement("div");
      div.className = "gap";
      div.title = `no recording ${clock(new Date(g.start))}–${clock(new Date(g.end))}`;
      if (place(div, Date.parse(g.start), Date.parse(g.end), bounds)) lanes.append(div);
    }
    for (const e of events.events || []) {
      const div = document.createElement("div");
      div.className = "event";
      div.title = `motion ${clock(new Date(e.start))}, ${Math.round(e.peak_area_percent ?? 0)} % of the picture`;
      if (place(div, Date.parse(e.start), e.end ? Date.parse(e.end) : Date.now(), bounds)) lanes.append(div);
    }
    drawTicks(bounds);
    const total = view.recordings.reduce((sum, r) => sum + (Math.min(r.until, +bounds.to) - Math.max(r.from, +bounds.from)), 0);
    $("timeline-summary").textContent = `${view.recordings.length} recording(s), ${duration(Math.max(0, total))} recorded between ${clock(bounds.from)} and ${clock(bounds.to)}`;
    drawStills(stills.stills || []);
    drawPlayhead();
  } catch (error) { showError(error); }
}

function drawStills(stills) {
  const strip = $("stills");
  strip.replaceChildren();
  // At most 60 thumbnails, evenly picked, so a day of stills every 10 s stays light.
  const every = Math.max(1, Math.ceil(stills.length / 60));
  for (let i = 0; i < stills.length; i += every) {
    const still = stills[i];
    const figure = document.createElement("figure");
    figure.className = "still";
    figure.innerHTML = `<img loading="lazy" alt=""><figcaption></figcaption>`;
    figure.querySelector("img").src = still.url;
    figure.querySelector("figcaption").textContent = clock(new Date(still.time));
    figure.addEventListener("click", () => playFrom(Date.parse(still.time)));
    strip.append(figure);
  }
  if (!stills.length) strip.textContent = "No stills in this window.";
}

function showDay(camera) {
  stopLive();
  for (const id of ["login", "grid"]) $(id).hidden = true;
  $("day").hidden = false;
  if (view.camera !== camera) {
    view.camera = camera;
    view.end = new Date();
    view.recordings = [];
    view.playing = null;
    $("player").removeAttribute("src");
    $("range").hidden = true;
    $("selection").hidden = true;
  }
  $("day-camera").textContent = camera;
  $("day-date").value = dayKey(view.end);
  $("span").value = String(view.span);
  refreshState();
  loadDay();
  clearInterval(dayTimer);
  // Today's window follows the clock while its end is now.
  dayTimer = setInterval(() => {
    if (Date.now() - view.end < 15000) { view.end = new Date(); loadDay(); }
    refreshState();
  }, 5000);
}

async function refreshState() {
  try {
    const { cameras } = await getJSON(`${api}/cameras`);
    const camera = cameras.find((c) => c.name === view.camera);
    const state = $("day-state");
    state.textContent = camera ? camera.state : "not configured";
    state.className = `state ${camera ? camera.state : ""}`;
  } catch (error) { showError(error); }
}

// ---- Playing ----

function recordingAt(time) {
  return view.recordings.find((r) => r.from <= time && time < r.until) || view.recordings.find((r) => r.from > time);
}

function playFrom(time) {
  const recording = recordingAt(time);
  if (!recording) { $("now-playing").textContent = `Nothing recorded after ${clock(new Date(time))} in this window.`; return; }
  const player = $("player");
  const offset = Math.max(0, time - recording.from) / 1000;
  view.playing = recording;
  if (player.dataset.id !== String(recording.id)) {
    player.dataset.id = recording.id;
    player.src = recording.url;
    player.addEventListener("loadedmetadata", () => { player.currentTime = offset; player.play().catch(() => {}); }, { once: true });
  } else {
    player.currentTime = offset;
    player.play().catch(() => {});
  }
}

function onPlayerTime() {
  const r = view.playing;
  if (!r) return;
  const now = r.from + $("player").currentTime * 1000;
  $("now-playing").textContent = `${view.camera}, ${dayKey(new Date(now))} ${clock(new Date(now))}`;
  drawPlayhead(now);
}

function drawPlayhead(time) {
  const head = $("playhead");
  if (time == null) { const r = view.playing; time = r ? r.from + $("player").currentTime * 1000 : null; }
  const bounds = windowBounds();
  const at = time == null ? -1 : position(time, bounds);
  head.hidden = at < 0 || at > 100;
  head.style.left = `${at}%`;
}

function onPlayerEnded() {
  // One recording after another: the day plays on across segment boundaries.
  const r = view.playing;
  if (!r) return;
  const next = view.recordings.find((n) => n.from >= r.until - 500 && n.id !== r.id);
  if (next) playFrom(next.from);
}

// ---- Timeline: click to play, drag to pick a range ----

function timeAt(event) {
  const box = $("timeline").getBoundingClientRect();
  const fraction = Math.min(1, Math.max(0, (event.clientX - box.left) / box.width));
  const bounds = windowBounds();
  return bounds.from.getTime() + fraction * (bounds.to - bounds.from);
}

function showRange(a, b) {
  const from = Math.min(a, b), to = Math.max(a, b), bounds = windowBounds();
  const selection = $("selection");
  selection.hidden = false;
  place(selection, from, to, bounds);
  return { from, to };
}

function pickRange(from, to) {
  const range = $("range");
  range.hidden = false;
  $("range-text").textContent = `${clock(new Date(from))}–${clock(new Date(to))} (${duration(to - from)})`;
  const clip = $("clip");
  clip.href = `${api}/cameras/${encodeURIComponent(view.camera)}/clip.mp4?${query(new Date(from), new Date(to))}`;
  clip.download = `${view.camera}-${dayKey(new Date(from))}-${clock(new Date(from)).replaceAll(":", "")}.mp4`;
  $("range-play").onclick = () => playFrom(from);
}

function setUpTimeline() {
  const timeline = $("timeline");
  timeline.addEventListener("pointerdown", (event) => {
    timeline.setPointerCapture(event.pointerId);
    view.drag = { start: timeAt(event), x: event.clientX };
  });
  timeline.addEventListener("pointermove", (event) => {
    if (view.drag && Math.abs(event.clientX - view.drag.x) > 4) showRange(view.drag.start, timeAt(event));
  });
  timeline.addEventListener("pointerup", (event) => {
    const drag = view.drag;
    view.drag = null;
    if (!drag) return;
    if (Math.abs(event.clientX - drag.x) <= 4) {
      $("selection").hidden = true;
      $("range").hidden = true;
      playFrom(drag.start);
    } else {
      const { from, to } = showRange(drag.start, timeAt(event));
      pickRange(from, to);
    }
  });
  timeline.addEventListener("keydown", (event) => {
    const step = view.span * 1000 / 50, r = view.playing;
    const now = r ? r.from + $("player").currentTime * 1000 : windowBounds().from.getTime();
    if (event.key === "ArrowRight") playFrom(now + step);
    if (event.key === "ArrowLeft") playFrom(now - step);
  });
}

function setUpControls() {
  $("span").addEventListener("change", () => { view.span = Number($("span").value); loadDay(); });
  const pan = (direction) => {
    view.end = new Date(Math.min(Date.now(), view.end.getTime() + direction * view.span * 500));
    $("day-date").value = dayKey(view.end);
    loadDay();
  };
  $("earlier").addEventListener("click", () => pan(-1));
  $("later").addEventListener("click", () => pan(1));
  $("day-date").addEventListener("change", () => {
    const [y, m, d] = $("day-date").value.split("-").map(Number);
    if (!y) return;
    const day = new Date(y, m - 1, d);
    // A past day is shown from its midnight; today up to now.
    view.end = dayKey(day) === dayKey(new Date()) ? new Date() : new Date(day.getTime() + Math.min(view.span, 86400) * 1000);
    loadDay();
  });
  const player = $("player");
  player.addEventListener("timeupdate", onPlayerTime);
  player.addEventListener("ended", onPlayerEnded);
}

// ---- Routing: #camera/NAME or the grid ----

function route() {
  const match = location.hash.match(/^#camera\/(.+)$/);
  if (match) showDay(decodeURIComponent(match[1])); else showGrid();
}

window.addEventListener("hashchange", route);
document.addEventListener("DOMContentLoaded", () => {
  setUpTimeline();
  setUpControls();
  route();
});
