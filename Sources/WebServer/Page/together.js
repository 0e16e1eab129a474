// Vigil's page: several cameras side by side (#together?cameras=a,b&at=ISO), each playing its
// recording at the same instant, kept in step by one master clock; without `at`, live.
// Uses app.js's helpers and live.js's player.
"use strict";

const together = { tiles: [], live: true, base: 0, t0: 0, paused: false, holding: 0, timer: null, cameras: [] };

// The master clock: the instant every camera shows, in ms since 1970. It holds (like a player
// buffering) while a camera that has a recording at that instant cannot play it yet.
const masterTime = () => together.paused || together.holding ? together.base : together.base + (performance.now() - together.t0);
function setMaster(time, paused = together.paused) {
  together.base = time;
  together.t0 = performance.now();
  together.paused = paused;
  together.holding = 0;
  $("tg-play").textContent = paused ? "Play" : "Pause";
}

function togetherAddress(at) {
  const names = [...$("tg-cameras").querySelectorAll("input:checked")].map((box) => box.value);
  return `#together?cameras=${names.map(encodeURIComponent).join(",")}${at == null ? "" : `&at=${new Date(at).toISOString()}`}`;
}

async function showTogether(_, params) {
  hideTogether();
  try {
    together.cameras = (await getJSON(`${api}/cameras`)).cameras;
    clearError();
  } catch (error) { return showError(error); }
  if (currentView !== views.together) return;
  const asked = params.get("cameras") ? params.get("cameras").split(",") : together.cameras.slice(0, 4).map((c) => c.name);
  const boxes = $("tg-cameras");
  boxes.querySelectorAll("label").forEach((label) => label.remove());
  for (const camera of together.cameras) {
    const label = document.createElement("label");
    label.innerHTML = `<input type="checkbox" name="camera"> <span></span>`;
    label.querySelector("input").value = camera.name;
    label.querySelector("input").checked = asked.includes(camera.name);
    label.querySelector("span").textContent = camera.name;
    boxes.append(label);
  }
  const at = params.get("at") ? Date.parse(params.get("at")) : NaN;
  together.live = Number.isNaN(at);
  const shown = new Date(together.live ? Date.now() - 60000 : at);
  $("tg-day").value = dayKey(shown);
  $("tg-time").value = clock(shown);
  for (const id of ["tg-back", "tg-frame-back", "tg-play", "tg-frame", "tg-fwd"]) $(id).disabled = together.live;
  setMaster(together.live ? Date.now() : at, false);
  const grid = $("tg-grid");
  grid.replaceChildren();
  for (const camera of together.cameras.filter((c) => asked.includes(c.name))) {
    const tile = document.createElement("figure");
    tile.className = "tile";
    tile.dataset.camera = camera.name;
    tile.innerHTML = `<div class="screen"><div class="none" hidden>no recording</div></div><figcaption><strong></strong><span class="muted"></span></figcaption>`;
    tile.querySelector("strong").textContent = camera.name;
    grid.append(tile);
    const screen = tile.querySelector(".screen");
    const state = { camera, tile, screen, none: screen.querySelector(".none"), note: tile.querySelector("figcaption span"), recs: [], fetched: null, fetching: false };
    if (together.live) {
      state.player = livePlayer(screen, camera);
      state.note.textContent = "live";
    } else {
      // Two players: the next recording waits, loaded, in the hidden one, so a boundary does not stall.
      state.videos = [0, 1].map((i) => {
        const video = document.createElement("video");
        video.muted = video.playsInline = true;
        video.preload = "auto";
        video.className = i ? "off" : "";
        video.setAttribute("aria-label", `${camera.name}, recorded`);
        screen.prepend(video);
        return video;
      });
    }
    together.tiles.push(state);
  }
  if (!together.tiles.length) grid.textContent = "Choose at least one camera.";
  $("tg-clock").textContent = together.live ? "Live" : "";
  if (!together.live) together.timer = setInterval(tgTick, 100);
}

function hideTogether() {
  clearInterval(together.timer);
  together.timer = null;
  for (const tile of together.tiles) {
    tile.player?.stop();
    for (const video of tile.videos || []) { video.pause(); video.removeAttribute("src"); video.load(); }
  }
  together.tiles = [];
  $("tg-grid").replaceChildren();
}

function tgTick() {
  const t = masterTime();
  const shown = new Date(t);
  $("tg-clock").textContent = `${dayKey(shown)} ${clock(shown)}.${Math.floor(shown.getMilliseconds() / 100)}`;
  for (const tile of together.tiles) { fetchRecordings(tile, t); syncTile(tile, t); }
  // A camera still loading or seeking holds the clock (at most 3 s, so one broken file stops no one).
  const now = performance.now(), stalled = !together.paused && now > (together.ignoreUntil || 0) && together.tiles.some((tile) => tile.stalled);
  if (stalled && !together.holding) { together.base = t; together.holding = now; }
  else if (together.holding && (!stalled || now - together.holding > 3000)) {
    if (stalled) together.ignoreUntil = now + 3000;
    setMaster(t);
  }
}

// The recordings around the clock's time, asked again as it nears the end of what is known
// (and every few seconds near now, where new recordings keep being finished).
async function fetchRecordings(tile, t) {
  const f = tile.fetched;
  const stale = !f || t < f.from || t > f.to - 60000 || (f.to > Date.now() - 60000 && Date.now() - f.at > 3000);
  if (!stale || tile.fetching) return;
  tile.fetching = true;
  const from = new Date(t - 30000), to = new Date(t + 300000);
  try {
    const answer = await getJSON(`${api}/cameras/${encodeURIComponent(tile.camera.name)}/recordings?${query(from, to)}`);
    tile.recs = answer.recordings.map((r) => ({ ...r, from: Date.parse(r.start), until: Date.parse(r.end) }));
    tile.fetched = { from: +from, to: +to, at: Date.now() };
  } catch (error) { showError(error); tile.fetched = { from: +from, to: +to, at: Date.now() }; }
  tile.fetching = false;
}

function loadTile(video, recording) {
  video.rec = recording;
  video.src = recording.url;
}

function syncTile(tile, t) {
  // A recording's end is its last frame's time: that frame is shown for one frame more.
  const frame = 1000 / (tile.camera.fps || 10);
  const r = tile.recs.find((n) => n.from <= t && t < n.until + frame);
  let [a, b] = tile.videos;
  if (a.classList.contains("off")) [a, b] = [b, a];
  const next = tile.recs.find((n) => n.from > (r ? r.until - 500 : t) && n !== r);
  if (next && b.rec !== next && b.rec !== r) loadTile(b, next);
  tile.none.hidden = !!r;
  tile.stalled = false;
  if (!r) {
    a.pause();
    tile.note.textContent = next ? `next recording ${clock(new Date(next.from))}` : "no recording";
    return;
  }
  tile.note.textContent = "";
  if (a.rec !== r) {
    if (b.rec === r) {
      a.pause();
      a.classList.add("off");
      b.classList.remove("off");
      [a, b] = [b, a];
    } else loadTile(a, r);
  }
  if (a.readyState >= 1 && !a.seeking) {
    const want = (t - r.from) / 1000, lag = want - a.currentTime, drift = Math.abs(lag);
    // Playing, a drift over 0.25 s is corrected; paused (stepping), the frame is put exactly.
    if (drift > (together.paused ? 0.02 : 0.25)) a.currentTime = Math.min(want, a.duration || want);
    // A smaller drift is taken up by playing a little faster or slower: no seek, so no stall.
    a.playbackRate = together.paused || drift < 0.05 ? 1 : Math.min(1.25, Math.max(0.8, 1 + lag));
  }
  tile.stalled = a.rec === r && !a.error && (a.readyState < 3 || a.seeking);
  if (together.paused || together.holding) { if (!a.paused) a.pause(); } else if (a.paused && !a.ended) a.play().catch(() => {});
}

function tgStep(ms) {
  setMaster(masterTime() + ms);
  tgTick();
  if (together.paused) history.replaceState(null, "", togetherAddress(masterTime()));
}

document.addEventListener("DOMContentLoaded", () => {
  $("tg-form").addEventListener("submit", (event) => {
    event.preventDefault();
    const [y, m, d] = $("tg-day").value.split("-").map(Number);
    const [hh, mm, ss] = ($("tg-time").value || "00:00:00").split(":").map(Number);
    if (!y) return showError(new Error("Pick a day."));
    location.hash = togetherAddress(new Date(y, m - 1, d, hh, mm, ss || 0).getTime());
  });
  $("tg-now").addEventListener("click", () => { location.hash = togetherAddress(null); });
  $("tg-play").addEventListener("click", () => {
    setMaster(masterTime(), !together.paused);
    history.replaceState(null, "", togetherAddress(masterTime()));
    tgTick();
  });
  $("tg-back").addEventListener("click", () => tgStep(-10000));
  $("tg-fwd").addEventListener("click", () => tgStep(10000));
  const frame = () => 1000 / ((together.tiles[0] && together.tiles[0].camera.fps) || 10);
  $("tg-frame-back").addEventListener("click", () => { setMaster(masterTime(), true); tgStep(-frame()); });
  $("tg-frame").addEventListener("click", () => { setMaster(masterTime(), true); tgStep(frame()); });
});

views.together = { section: "together", show: showTogether, hide: hideTogether };
