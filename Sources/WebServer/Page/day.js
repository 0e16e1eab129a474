// Vigil's page: one camera's day (timeline, player, clip, stills). Uses app.js's helpers.
"use strict";

const view = { camera: null, day: null, span: 3600, end: null, recordings: [], playing: null, drag: null };
let dayTimer = null;

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
  showDayLive(camera); // live.js: live until a time is picked
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
  stopDayLive(); // live.js: the recorded video plays instead
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

function hideDay() {
  clearInterval(dayTimer);
  stopDayLive(false);
  $("player").pause();
}

views.camera = { section: "day", show: showDay, hide: hideDay };
