// Vigil's page: one camera's day (timeline, player, clip, stills). Uses app.js's helpers.
// The timeline shows a window of the day, 1 min to 24 h: wheel, pinch and +/- zoom, a drag pans,
// Shift+drag (or "Select", then drag; or a range's handles) picks a range, a click plays.
"use strict";

const MINUTE = 60e3, STILLS_PAGE = 24;
const view = {
  camera: null, dayStart: 0, dayNext: 0, from: 0, to: 0, recordings: [], events: [], cursor: null,
  gesture: null, pointers: new Map(), selecting: false, range: null, stills: null, player: null,
};
let dayTimer = null;

// ---- The day and its window ----

const today = () => dayKey(new Date(view.dayStart)) === dayKey(new Date());
const dayEnd = () => today() ? Date.now() : view.dayNext;
const span = () => view.to - view.from;
const position = (time) => (time - view.from) / span() * 100;

function setWindow(from, to) {
  const max = view.dayNext - view.dayStart;
  const width = Math.min(max, Math.max(MINUTE, to - from));
  from = Math.min(Math.max(view.dayStart, from), view.dayNext - width);
  view.from = from;
  view.to = from + width;
  render();
}

function zoomAround(time, factor) {
  const width = Math.min(view.dayNext - view.dayStart, Math.max(MINUTE, span() * factor));
  const fraction = (time - view.from) / span();
  setWindow(time - fraction * width, time - fraction * width + width);
}

// The first view: the day's recordings (today: from the first to now), with margins. Less than
// the narrowest window (1 min) of them: that window, its end 5 % of it after theirs (today: now).
function fit() {
  const first = view.recordings[0], last = view.recordings[view.recordings.length - 1];
  const from = first ? first.from : view.dayStart, to = today() ? Date.now() : last ? last.until : view.dayNext;
  const margin = Math.max(5000, (to - from) * 0.05);
  if (to - from + 2 * margin < MINUTE) setWindow(to + MINUTE * 0.05 - MINUTE, to + MINUTE * 0.05);
  else setWindow(from - margin, to + margin);
}

// Keeps `time` in the window, moving it as little as needed.
function reveal(time) {
  if (time < view.from || time > view.to) setWindow(time - span() / 4, time + span() * 3 / 4);
}

// ---- Drawing ----

function place(element, start, end) {
  const left = Math.max(0, position(start)), right = Math.min(100, position(end));
  element.style.left = `${left}%`;
  element.style.width = `${Math.max(0, right - left)}%`;
  return right > 0 && left < 100;
}

function bar(className, start, end, title) {
  const div = document.createElement("div");
  div.className = className;
  div.title = title;
  if (place(div, start, end)) $("lanes").append(div);
}

const TICKS = [1, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600].map((s) => s * 1000);

function render() {
  if (!view.camera) return;
  $("lanes").replaceChildren();
  // Recordings closer than a pixel (or a second) apart are drawn as one run.
  const joint = Math.max(1000, span() / ($("timeline").clientWidth || 800));
  let run = null;
  const flush = () => run && bar("segment", run.from, run.until, `${clock(new Date(run.from))}–${clock(new Date(run.until))}`);
  for (const r of view.recordings) {
    if (run && r.from - run.until <= joint) { run.until = Math.max(run.until, r.until); continue; }
    if (run && r.from - run.until > 1000) { flush(); bar("gap", run.until, r.from, `no recording ${clock(new Date(run.until))}–${clock(new Date(r.from))}`); } else flush();
    run = { from: r.from, until: r.until };
  }
  flush();
  for (const e of view.events) {
    bar("event", Date.parse(e.start), e.end ? Date.parse(e.end) : Date.now(), `motion ${clock(new Date(e.start))}, ${Math.round(e.peak_area_percent ?? 0)} % of the picture`);
  }
  const ticks = $("ticks");
  ticks.replaceChildren();
  const step = TICKS.find((s) => span() / s <= ($("timeline").clientWidth || 800) / 80) || TICKS[TICKS.length - 1];
  for (let t = view.dayStart + Math.ceil((view.from - view.dayStart) / step) * step; t <= view.to; t += step) {
    const label = document.createElement("span");
    label.style.left = `${position(t)}%`;
    label.textContent = step < MINUTE ? clock(new Date(t)) : clock(new Date(t)).slice(0, 5);
    ticks.append(label);
  }
  const total = view.recordings.reduce((sum, r) => sum + r.until - r.from, 0);
  $("timeline-summary").textContent = `${view.recordings.length} recording(s), ${duration(total)} recorded this day; showing ${clock(new Date(view.from))}–${clock(new Date(view.to))}`;
  if (view.range) place($("selection"), view.range.from, view.range.to);
  drawPlayhead();
}

function drawPlayhead() {
  const time = view.player.now() ?? view.cursor, head = $("playhead"), timeline = $("timeline");
  const at = time == null ? -1 : position(time);
  head.hidden = at < 0 || at > 100;
  head.style.left = `${at}%`;
  timeline.setAttribute("aria-valuenow", String(Math.round(((time ?? view.from) - view.dayStart) / 1000)));
  timeline.setAttribute("aria-valuetext", time == null ? "nothing playing" : clock(new Date(time)));
}

// ---- Loading ----

async function loadDay(fresh) {
  const camera = view.camera, path = `${api}/cameras/${encodeURIComponent(camera)}`;
  // Today is read again every few seconds: from the last recording on, not the whole day.
  const last = fresh ? null : view.recordings[view.recordings.length - 1];
  const from = new Date(last ? last.from : view.dayStart), to = new Date(dayEnd());
  try {
    const [recordings, events] = await Promise.all([
      getJSON(`${path}/recordings?${query(from, to)}`),
      // Motion events are there only where motion detection is switched on.
      getJSON(`${path}/events?${query(new Date(view.dayStart), to)}`).catch(() => ({ events: [] })),
    ]);
    if (camera !== view.camera) return;
    clearError();
    const kept = view.recordings.filter((r) => r.from < from.getTime());
    view.recordings = view.player.recordings = kept.concat(asRecordings(recordings.recordings));
    view.events = events.events || [];
    if (fresh) fit(); else render();
  } catch (error) { showError(error); }
}

// The stills strip: newest first, older pages (fetched by time) as it scrolls.
async function moreStills() {
  const s = view.stills, camera = view.camera;
  if (!s || s.loading) return;
  s.loading = true;
  try {
    let chunk = 10 * MINUTE;
    while (s.buffer.length < STILLS_PAGE && s.before > view.dayStart) {
      const from = Math.max(view.dayStart, s.before - chunk);
      const { stills } = await getJSON(`${api}/cameras/${encodeURIComponent(camera)}/stills?${query(new Date(from), new Date(s.before - 1))}`);
      if (camera !== view.camera || s !== view.stills) return;
      s.buffer.push(...stills.reverse());
      s.before = from;
      if (!stills.length) chunk *= 4;
    }
    $("stills").append(...s.buffer.splice(0, STILLS_PAGE).map(stillFigure));
    $("stills-empty").hidden = $("stills").children.length > 0;
  } catch (error) { showError(error); } finally { s.loading = false; }
  // Still at the end of the strip (a wide screen): the next page too.
  if (s === view.stills && (s.buffer.length || s.before > view.dayStart) && stillsEndVisible()) moreStills();
}

function stillsEndVisible() {
  const strip = $("stills");
  return strip.scrollWidth - strip.scrollLeft - strip.clientWidth < 300;
}

async function newerStills() {
  const s = view.stills, camera = view.camera;
  try {
    const { stills } = await getJSON(`${api}/cameras/${encodeURIComponent(camera)}/stills?${query(new Date(s.after + 1), new Date())}`);
    if (s !== view.stills || !stills.length) return;
    s.after = Date.parse(stills[stills.length - 1].time);
    // The newest stay in sight unless the strip was scrolled on.
    const strip = $("stills"), atStart = strip.scrollLeft < 10, width = strip.scrollWidth;
    strip.prepend(...stills.reverse().map(stillFigure));
    strip.scrollLeft = atStart ? 0 : strip.scrollLeft + strip.scrollWidth - width;
    $("stills-empty").hidden = true;
  } catch (error) { showError(error); }
}

function stillFigure(still) {
  const button = document.createElement("button");
  button.type = "button";
  button.className = "still";
  button.innerHTML = `<img loading="lazy" alt=""><span></span>`;
  button.querySelector("img").src = still.url;
  button.querySelector("span").textContent = clock(new Date(still.time));
  button.dataset.time = still.time;
  button.addEventListener("click", () => playFrom(Date.parse(still.time)));
  return button;
}

function openDay(day) {
  view.dayStart = day.getTime();
  view.dayNext = new Date(day.getFullYear(), day.getMonth(), day.getDate() + 1).getTime();
  view.from = view.dayStart;
  view.to = view.dayNext;
  view.recordings = view.player.recordings = [];
  view.events = [];
  view.cursor = null;
  clearRange();
  $("day-date").value = dayKey(day);
  $("stills").replaceChildren();
  const end = dayEnd();
  view.stills = { buffer: [], before: end, after: end, loading: false };
  loadDay(true);
  moreStills();
}

function showDay(camera) {
  if (view.camera !== camera) {
    view.camera = camera;
    view.player.stop();
    $("day-note").textContent = "";
    const now = new Date();
    openDay(new Date(now.getFullYear(), now.getMonth(), now.getDate()));
  }
  $("day-camera").textContent = camera;
  refreshState();
  showDayLive(camera); // live.js: live until a time is picked
  clearInterval(dayTimer);
  dayTimer = setInterval(() => {
    if (today()) {
      // Today's window follows the clock while it shows now.
      const following = view.to > Date.now() - 6000 && view.to < Date.now() + span() * 0.1;
      loadDay(false).then(() => { if (following && view.to - Date.now() < span() * 0.02) setWindow(Date.now() - span() * 0.95, Date.now() + span() * 0.05); });
      newerStills();
    }
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

// Plays from `time`, or from the next recording after it, and says so.
function playFrom(time) {
  const recording = view.player.play(time);
  const note = $("day-note");
  view.cursor = time;
  if (!recording) { note.textContent = `No recording after ${clock(new Date(time))} on this day.`; drawPlayhead(); return; }
  stopDayLive(); // live.js: the recorded video plays instead
  note.textContent = recording.from > time + 500 ? `No recording at ${clock(new Date(time))}; playing from ${clock(new Date(recording.from))}` : "";
  reveal(Math.max(time, recording.from));
  drawPlayhead();
}

function onPlayerTime(now) {
  $("now-playing").textContent = `${view.camera}, ${dayKey(new Date(now))} ${clock(new Date(now))}`;
  drawPlayhead();
}

// ---- Ranges ----

function clearRange() {
  view.range = null;
  $("selection").hidden = true;
  $("range").hidden = true;
}

function showRange(a, b) {
  view.range = { from: Math.max(view.dayStart, Math.min(a, b)), to: Math.min(view.dayNext, Math.max(a, b)) };
  $("selection").hidden = false;
  place($("selection"), view.range.from, view.range.to);
}

// A range's clip can be downloaded only when it holds footage.
function pickRange() {
  const { from, to } = view.range;
  const footage = view.recordings.reduce((sum, r) => sum + Math.max(0, Math.min(r.until, to) - Math.max(r.from, from)), 0);
  $("range").hidden = false;
  const clip = $("clip");
  clip.disabled = footage <= 0;
  clip.title = footage > 0 ? "" : "No recording in this range: nothing to download";
  $("range-text").textContent = `${clock(new Date(from))}–${clock(new Date(to))} · ${footage > 0 ? `${duration(footage)} recorded` : "no recording"}`;
}

function downloadRange() {
  const { from, to } = view.range;
  const link = document.createElement("a");
  link.href = `${api}/cameras/${encodeURIComponent(view.camera)}/clip.mp4?${query(new Date(from), new Date(to))}`;
  link.download = `${view.camera}-${dayKey(new Date(from))}-${clock(new Date(from)).replaceAll(":", "")}.mp4`;
  link.click();
}

// ---- Gestures: drag pans, Shift+drag / Select / handles pick a range, a click plays, two pointers pinch ----

function timeAt(x) {
  const box = $("timeline").getBoundingClientRect();
  return view.from + Math.min(1, Math.max(0, (x - box.left) / box.width)) * span();
}

function setUpTimeline() {
  const timeline = $("timeline");
  view.player = recordedPlayer($("player"), onPlayerTime);
  timeline.addEventListener("pointerdown", (event) => {
    timeline.setPointerCapture(event.pointerId);
    view.pointers.set(event.pointerId, event.clientX);
    if (view.pointers.size === 2) {
      const [a, b] = [...view.pointers.values()];
      view.gesture = { kind: "pinch", distance: Math.max(10, Math.abs(a - b)), time: timeAt((a + b) / 2), width: span(), moved: true };
      return;
    }
    if (view.pointers.size > 2) return;
    const handle = event.target.dataset.end;
    const kind = handle || event.shiftKey || view.selecting ? "range" : "pan";
    const anchor = handle ? view.range[handle === "from" ? "to" : "from"] : timeAt(event.clientX);
    view.gesture = { kind, x: event.clientX, from: view.from, anchor, moved: false };
  });
  timeline.addEventListener("pointermove", (event) => {
    const g = view.gesture;
    if (!g || !view.pointers.has(event.pointerId)) return;
    view.pointers.set(event.pointerId, event.clientX);
    if (g.kind === "pinch") {
      if (view.pointers.size < 2) return;
      const [a, b] = [...view.pointers.values()], centre = (a + b) / 2;
      const width = Math.min(view.dayNext - view.dayStart, Math.max(MINUTE, g.width * g.distance / Math.max(10, Math.abs(a - b))));
      const box = timeline.getBoundingClientRect(), fraction = (centre - box.left) / box.width;
      setWindow(g.time - fraction * width, g.time - fraction * width + width);
      return;
    }
    if (Math.abs(event.clientX - g.x) > 4) g.moved = true;
    if (!g.moved) return;
    if (g.kind === "pan") {
      const shift = (event.clientX - g.x) / timeline.getBoundingClientRect().width * span();
      setWindow(g.from - shift, g.from - shift + span());
    } else showRange(g.anchor, timeAt(event.clientX));
  });
  const end = (event) => {
    view.pointers.delete(event.pointerId);
    const g = view.gesture;
    if (!g || view.pointers.size) return;
    view.gesture = null;
    if (event.type === "pointercancel" || g.kind === "pinch") return;
    if (!g.moved) { if (g.kind === "pan" || !event.target.dataset.end) playFrom(timeAt(event.clientX)); return; }
    if (g.kind === "range") pickRange();
  };
  timeline.addEventListener("pointerup", end);
  timeline.addEventListener("pointercancel", end);
  timeline.addEventListener("wheel", (event) => {
    event.preventDefault();
    const delta = event.deltaY * (event.deltaMode === 1 ? 33 : 1);
    zoomAround(timeAt(event.clientX), Math.exp(Math.max(-300, Math.min(300, delta)) * 0.002));
  }, { passive: false });
  timeline.addEventListener("keydown", (event) => {
    const now = view.player.now() ?? view.cursor ?? view.from + span() / 2;
    const last = view.recordings[view.recordings.length - 1];
    const keys = {
      ArrowRight: () => playFrom(now + span() / 50), ArrowLeft: () => playFrom(now - span() / 50),
      "+": () => zoomAround(now, 0.5), "=": () => zoomAround(now, 0.5), "-": () => zoomAround(now, 2),
      Home: () => playFrom(view.dayStart), End: () => last && playFrom(last.from),
    };
    if (!keys[event.key]) return;
    event.preventDefault();
    keys[event.key]();
  });
  window.addEventListener("resize", render);
}

function setUpControls() {
  const middle = () => { const t = view.player.now() ?? view.cursor; return t != null && t >= view.from && t <= view.to ? t : view.from + span() / 2; };
  $("zoom-in").addEventListener("click", () => zoomAround(middle(), 0.5));
  $("zoom-out").addEventListener("click", () => zoomAround(middle(), 2));
  $("fit").addEventListener("click", fit);
  $("select").addEventListener("click", () => {
    view.selecting = !view.selecting;
    $("select").setAttribute("aria-pressed", String(view.selecting));
  });
  $("day-date").addEventListener("change", () => {
    const [y, m, d] = $("day-date").value.split("-").map(Number);
    if (y) openDay(new Date(y, m - 1, d));
  });
  $("clip").addEventListener("click", downloadRange);
  $("range-play").addEventListener("click", () => playFrom(view.range.from));
  $("range-clear").addEventListener("click", clearRange);
  $("stills").addEventListener("scroll", () => { if (stillsEndVisible()) moreStills(); }, { passive: true });
  if (matchMedia("(pointer: coarse)").matches) $("hint").textContent = "Drag to move · pinch or −/+ to zoom · tap to play · Select, then drag, to pick a clip";
}

function hideDay() {
  clearInterval(dayTimer);
  stopDayLive(false);
  $("player").pause();
}

views.camera = { section: "day", show: showDay, hide: hideDay };
