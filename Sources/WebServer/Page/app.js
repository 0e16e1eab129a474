// Vigil's page: what every view shares (fetching, errors, time), the cameras' grid, and routing.
// One file per view beside it (day.js: a camera's day).
// Plain JavaScript over the JSON API (/api/v1); no build step, nothing from elsewhere.
"use strict";

const $ = (id) => document.getElementById(id);
const api = "/api/v1";
let gridTimer = null;

// ---- Fetching ----

class Unauthorized extends Error {}

async function request(path, init) {
  const response = await fetch(path, { credentials: "same-origin", ...init, headers: { Accept: "application/json", ...(init && init.headers) } });
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

const getJSON = (path) => request(path);
const postJSON = (path, body) => request(path, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body) });

function showError(error) {
  if (error instanceof Unauthorized) return showLogin();
  $("error").textContent = String(error.message || error);
  $("error").hidden = false;
}

function clearError() { $("error").hidden = true; }

function showLogin() {
  if (currentView) currentView.hide();
  currentView = null;
  for (const section of document.querySelectorAll("main > section")) section.hidden = section.id !== "login";
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

// ---- Recorded video: a camera's segments played one after another as one span of time ----

const asRecordings = (list) => list.map((r) => ({ ...r, from: Date.parse(r.start), until: Date.parse(r.end) }));

// `video` plays `player.recordings` (sorted, with from/until in ms); onTime(ms) as it plays.
function recordedPlayer(video, onTime) {
  // held: paused by the viewer (not by a recording's end), so the next recording waits too.
  const player = { recordings: [], playing: null, held: false, advancing: false };
  player.now = () => player.playing ? player.playing.from + video.currentTime * 1000 : null;
  player.at = (time) => player.recordings.find((r) => r.from <= time && time < r.until) || player.recordings.find((r) => r.from > time);
  // Plays from `time`, or from the next recording after it; the recording played, or undefined.
  player.play = (time, onward) => {
    const r = player.at(time);
    if (!r) return r;
    const offset = Math.max(0, time - r.from) / 1000;
    player.playing = r;
    // By address, not id: in a cluster another node's recording has the catalogue's id, which
    // may equal one of this node's.
    if (video.dataset.src !== r.url) {
      video.dataset.src = r.url;
      video.src = r.url;
      player.advancing = onward;
      video.addEventListener("loadedmetadata", () => {
        if (player.playing !== r) return;
        player.advancing = false;
        video.currentTime = offset;
        if (!(onward && player.held)) video.play().catch(() => {});
      }, { once: true });
    } else { video.currentTime = offset; video.play().catch(() => {}); }
    return r;
  };
  // Space: the viewer's hold (a recording's end or the next one loading is no hold).
  player.toggle = () => {
    const play = player.held || (video.paused && !player.advancing);
    player.held = !play;
    if (play) video.play().catch(() => {}); else video.pause();
  };
  player.stop = () => { video.pause(); video.removeAttribute("src"); delete video.dataset.src; player.playing = null; };
  // Its shape kept from one recording to the next: no jump of the page while the next one loads.
  video.addEventListener("loadedmetadata", () => { if (video.videoWidth) video.style.aspectRatio = `${video.videoWidth} / ${video.videoHeight}`; });
  video.addEventListener("timeupdate", () => { if (player.playing) onTime(player.now()); });
  video.addEventListener("pause", () => { player.held = !video.ended; });
  video.addEventListener("play", () => { player.held = false; });
  video.addEventListener("ended", () => {
    const r = player.playing;
    const next = r && player.recordings.find((n) => n.from >= r.until - 500 && n.url !== r.url);
    if (next) player.play(next.from, true);
  });
  return player;
}

// ---- The grid of cameras ----

function stopLive() {
  // Leaving the grid closes the live streams (live.js): each is one of the server's capped live clients.
  unwatchGrid();
  $("grid").replaceChildren();
  clearInterval(gridTimer);
}

function facts(camera) {
  const parts = [];
  // In a cluster: which node records it. Another node's camera shows its snapshot from there;
  // its frame counts are that node's, not known here.
  if (camera.state === "elsewhere") return `on ${camera.node}`;
  if (camera.node) parts.push(camera.node);
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
  const media = document.createElement("div");
  media.className = "media";
  const info = document.createElement("div");
  info.className = "info";
  info.innerHTML = `<span class="name"></span><span class="state"></span><span class="facts"></span><button type="button" class="full">Full screen</button>`;
  card.append(media, info);
  const open = () => { location.hash = `#camera/${encodeURIComponent(camera.name)}`; };
  card.addEventListener("click", (e) => { if (!e.target.closest("button")) open(); });
  card.addEventListener("keydown", (e) => { if (e.key === "Enter" && e.target === card) open(); });
  const full = info.querySelector(".full");
  full.setAttribute("aria-label", `Full screen live: ${camera.name}`);
  full.addEventListener("click", () => { location.hash = `#live/${encodeURIComponent(camera.name)}`; });
  updateCard(card, camera);
  // Live while on screen, a snapshot a second otherwise (live.js); appended first, watched after.
  queueMicrotask(() => watchCard(card, camera));
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
    // An answer that comes after the grid was left would leave cards there that nobody watches.
    if (currentView !== views[""]) return;
    clearError();
    const grid = $("grid");
    const cards = new Map([...grid.children].map((c) => [c.dataset.camera, c]));
    for (const camera of cameras) {
      const card = cards.get(camera.name);
      if (card) { updateCard(card, camera); cards.delete(camera.name); } else grid.append(cameraCard(camera));
    }
    for (const gone of cards.values()) { unwatchCard(gone); gone.remove(); }
    const recording = cameras.filter((c) => c.state === "recording").length;
    $("summary").textContent = `${cameras.length} camera(s), ${recording} recording`;
    if (!cameras.length) grid.textContent = "No camera is configured.";
  } catch (error) { showError(error); }
}

function showGrid() {
  refreshGrid();
  clearInterval(gridTimer);
  gridTimer = setInterval(refreshGrid, 2000);
}

// ---- Views and routing ----
// A view registers itself in `views` under the first word of its address ("#review",
// "#camera/NAME?…"; "" is the grid): `section` is its element's id, `show(argument, params)`
// runs each time its address is opened, `hide()` when another view is (it stops its streams).
const views = {};
let currentView = null;

function route() {
  const match = location.hash.match(/^#([a-z]+)(?:\/([^?]*))?(?:\?(.*))?$/);
  const name = match && views[match[1]] ? match[1] : "";
  const argument = match && match[2] ? decodeURIComponent(match[2]) : null;
  const params = new URLSearchParams((match && match[3]) || "");
  const next = views[name];
  if (currentView && currentView !== next) currentView.hide();
  currentView = next;
  for (const section of document.querySelectorAll("main > section")) section.hidden = section.id !== next.section;
  for (const link of document.querySelectorAll("header nav a")) {
    if (link.getAttribute("href") === `#${name}`) link.setAttribute("aria-current", "page"); else link.removeAttribute("aria-current");
  }
  next.show(argument, params);
}

views[""] = { section: "grid", show: showGrid, hide: stopLive };

// "Log out" only where there is something to log out of (a server with a token or users), with
// who is logged in; a viewer is not offered what only an admin may do (clips, marking events).
const session = {};
async function showSession() {
  try { Object.assign(session, await getJSON(`${api}/session`)); } catch { /* the page still works as far as the server lets it */ }
  $("logout").hidden = !session.token_required;
  // A person's name; the token of token_file (user "token_file") is nobody's.
  if (session.user && session.user !== "token_file") $("logout").querySelector("button").textContent = `Log out ${session.user}`;
  for (const id of ["clip", "review-toggle"]) $(id).hidden = session.role === "viewer";
}

window.addEventListener("hashchange", route);
document.addEventListener("DOMContentLoaded", () => {
  setUpTimeline();
  setUpControls();
  showSession();
  route();
});
