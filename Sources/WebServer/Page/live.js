// Vigil's page: live pictures. `livePlayer(box, camera)` plays a camera in `box`: the H.264
// WebSocket (fragmented MP4) through Media Source Extensions at the camera's full rate, or its
// MJPEG stream where there is no H.264 stream or no MSE. Also the full-screen view (#live/NAME)
// and the day view's live picture. Uses app.js's helpers.
"use strict";

// The codec string MSE needs ("avc1.PPCCLL"), read from the init segment's avcC box.
function avcCodec(bytes) {
  for (let i = 4; i + 8 < bytes.length; i++) {
    if (bytes[i] === 0x61 && bytes[i + 1] === 0x76 && bytes[i + 2] === 0x63 && bytes[i + 3] === 0x43) {
      const hex = (b) => b.toString(16).padStart(2, "0");
      return `avc1.${hex(bytes[i + 5])}${hex(bytes[i + 6])}${hex(bytes[i + 7])}`;
    }
  }
  return null;
}

const liveMSE = typeof MediaSource !== "undefined";
// "sequence" keeps the buffer gapless when fragments were skipped or the camera's clock jumped:
// the next fragment is placed right after the last one, so playback never waits at a hole.
const liveMode = "sequence";

function livePlayer(box, camera) {
  const player = { stopped: false, stats: { appended: 0, skipped: 0, jumps: 0, reconnects: 0, trimmed: 0 } };
  let retry = 1000, timer = null, socket = null, url = null, media = null, mjpeg = !camera.live_mp4 || !liveMSE;

  function clear() {
    if (socket) {
      const s = socket;
      socket = s.onclose = s.onmessage = s.onerror = null;
      // Leaving, the page asks the server to end the stream, so that the server closes and sends
      // no fragment after its close frame (a browser's close can cross one); closed here if not.
      if (s.readyState === WebSocket.OPEN) { s.send("close"); setTimeout(() => s.close(), 2000); } else s.close();
    }
    if (media) { media.onerror = media.onload = null; media.removeAttribute("src"); media.load?.(); media.remove(); media = null; }
    if (url) { URL.revokeObjectURL(url); url = null; }
  }

  function again() {
    // A stream that ended (camera lost, server restarted, viewer cap) is tried again, less often each time.
    clear();
    clearTimeout(timer);
    if (player.stopped) return;
    player.stats.reconnects++;
    box.dataset.live = "waiting";
    timer = setTimeout(open, retry);
    retry = Math.min(retry * 2, 15000);
  }

  function openMJPEG() {
    media = document.createElement("img");
    media.alt = `${camera.name}, live`;
    media.onload = () => { retry = 1000; };
    media.onerror = again;
    media.src = `${camera.live_mjpeg || camera.snapshot}?t=${Date.now()}`;
    box.dataset.live = "mjpeg";
    box.prepend(media);
  }

  function openMSE() {
    const video = media = document.createElement("video");
    video.muted = video.autoplay = video.playsInline = true;
    video.setAttribute("aria-label", `${camera.name}, live`);
    video.onerror = again; // a fragment that does not decode: start again at a keyframe
    const source = new MediaSource();
    url = URL.createObjectURL(source);
    video.src = url;
    box.dataset.live = "connecting";
    box.prepend(video);
    const queue = [];
    let buffer = null;

    function pump() {
      if (!buffer || buffer.updating || source.readyState !== "open") return;
      const ranges = buffer.buffered;
      // Memory stays flat: what is more than 10 s behind the picture goes.
      if (ranges.length && video.currentTime - ranges.start(0) > 10) {
        player.stats.trimmed++;
        return buffer.remove(0, video.currentTime - 4);
      }
      if (!queue.length) return;
      // Full (QuotaExceededError) or broken: start again, from the camera's latest keyframe.
      try { buffer.appendBuffer(queue.shift()); player.stats.appended++; } catch { again(); }
    }

    function follow() {
      // Low latency: more than half a second behind the live edge, jump to it; a little behind,
      // play slightly faster (no seek, no decoding again from the keyframe) until 0.2 s is left.
      const ranges = buffer.buffered;
      if (!ranges.length) return;
      const start = ranges.start(ranges.length - 1), end = ranges.end(ranges.length - 1), behind = end - video.currentTime;
      if (behind > 0.5 || video.currentTime < start) {
        video.currentTime = Math.max(start, end - 0.2);
        player.stats.jumps++;
      }
      video.playbackRate = behind > 0.3 ? 1.25 : behind < 0.2 ? 1 : video.playbackRate;
      if (video.paused) video.play().catch(() => {});
      box.dataset.live = "mse";
    }

    source.addEventListener("sourceopen", () => {
      socket = new WebSocket(`${location.protocol === "https:" ? "wss" : "ws"}://${location.host}${camera.live_mp4}`);
      socket.binaryType = "arraybuffer";
      socket.onmessage = (message) => {
        if (typeof message.data === "string") {
          // {"skipped":N}: we fell behind; what comes next starts at a keyframe.
          try { player.stats.skipped += JSON.parse(message.data).skipped || 0; } catch {}
          return;
        }
        if (!buffer) {
          const codec = avcCodec(new Uint8Array(message.data));
          const type = `video/mp4; codecs="${codec}"`;
          if (!codec || !MediaSource.isTypeSupported(type)) { mjpeg = true; clear(); return openMJPEG(); }
          buffer = source.addSourceBuffer(type);
          buffer.mode = liveMode;
          buffer.addEventListener("updateend", () => { if (source.readyState === "open" && media === video) { follow(); pump(); } });
          retry = 1000;
        }
        queue.push(message.data);
        // A tab that cannot keep up starts again at a keyframe rather than queueing without end
        // (fragments cannot be dropped from the middle of a run: the rest would not decode).
        if (queue.length > 60) return again();
        pump();
      };
      socket.onclose = socket.onerror = again;
    }, { once: true });
  }

  function open() {
    timer = null;
    if (player.stopped) return;
    if (mjpeg) openMJPEG(); else openMSE();
  }

  player.stop = () => {
    player.stopped = true;
    clearTimeout(timer);
    clear();
    delete box.dataset.live;
  };
  player.video = () => media;
  open();
  return player;
}

// The cameras as the API lists them, fetched again when older than a few seconds.
let liveCameras = { at: 0, list: [] };
async function cameraNamed(name) {
  if (Date.now() - liveCameras.at > 5000) liveCameras = { at: Date.now(), list: (await getJSON(`${api}/cameras`)).cameras };
  return liveCameras.list.find((c) => c.name === name);
}

// ---- The grid: live for the cards on screen, a snapshot a second for the others ----

const gridLive = { observer: null, players: new Map(), timer: null };

function watchCard(card, camera) {
  if (!card.isConnected || currentView !== views[""]) return;
  card.camera = camera;
  gridLive.observer ??= new IntersectionObserver((entries) => {
    for (const entry of entries) if (entry.isIntersecting) liveCard(entry.target); else stillCard(entry.target);
  });
  gridLive.observer.observe(card);
  stillCard(card);
  gridLive.timer ??= setInterval(() => { for (const c of $("grid").querySelectorAll(".camera")) if (!gridLive.players.has(c)) gridSnapshot(c); }, 1000);
}

function gridSnapshot(card) {
  let img = card.querySelector(".media img.still");
  if (!img) {
    img = document.createElement("img");
    img.className = "still";
    img.alt = `${card.camera.name}, latest picture`;
    card.querySelector(".media").prepend(img);
  }
  img.src = `${card.camera.snapshot}?t=${Date.now()}`;
  card.querySelector(".media").dataset.live = "snapshot";
}

function liveCard(card) {
  if (gridLive.players.has(card) || !card.isConnected) return;
  card.querySelector(".media img.still")?.remove();
  gridLive.players.set(card, livePlayer(card.querySelector(".media"), card.camera));
}

function stillCard(card) {
  gridLive.players.get(card)?.stop();
  gridLive.players.delete(card);
  if (card.isConnected) gridSnapshot(card);
}

function unwatchCard(card) {
  gridLive.observer?.unobserve(card);
  stillCard(card);
}

function unwatchGrid() {
  gridLive.observer?.disconnect();
  gridLive.observer = null;
  for (const player of gridLive.players.values()) player.stop();
  gridLive.players.clear();
  clearInterval(gridLive.timer);
  gridLive.timer = null;
}

// ---- One camera full screen: #live/NAME ----

const fullView = { player: null, timer: null, back: "#", camera: null };
let lastHash = location.hash;
window.addEventListener("hashchange", () => { lastHash = location.hash; });

async function showFull(name) {
  hideFull();
  if (!lastHash.startsWith("#live/")) fullView.back = lastHash || "#";
  $("full-back").href = fullView.back;
  $("full-day").href = `#camera/${encodeURIComponent(name)}`;
  $("full-name").textContent = fullView.camera = name;
  try {
    const camera = await cameraNamed(name);
    if (fullView.camera !== name || currentView !== views.live) return;
    if (!camera) throw new Error(`No camera is named ${name}.`);
    clearError();
    fullView.player = livePlayer($("full-box"), camera);
    const state = async () => {
      try {
        const c = await cameraNamed(name);
        $("full-state").textContent = c ? c.state : "not configured";
        $("full-state").className = `state ${c ? c.state : ""}`;
      } catch {}
    };
    state();
    fullView.timer = setInterval(state, 5000);
  } catch (error) { showError(error); }
}

function hideFull() {
  clearInterval(fullView.timer);
  if (fullView.player) fullView.player.stop();
  fullView.player = null;
  if (document.fullscreenElement) document.exitFullscreen().catch(() => {});
}

function toggleFullscreen() {
  const box = $("live");
  if (document.fullscreenElement) return document.exitFullscreen().catch(() => {});
  if (box.requestFullscreen) box.requestFullscreen().catch(() => {});
  else fullView.player?.video()?.webkitEnterFullscreen?.();
}

document.addEventListener("keydown", (event) => {
  if (currentView !== views.live || event.target.closest("input, select, textarea") || event.ctrlKey || event.metaKey || event.altKey) return;
  if (event.key === "f") toggleFullscreen();
  if (event.key === "Escape" && !document.fullscreenElement) location.hash = fullView.back;
});
document.addEventListener("DOMContentLoaded", () => $("full-toggle").addEventListener("click", toggleFullscreen));

views.live = { section: "live", show: showFull, hide: hideFull };

// ---- The day view's live picture, until a time is picked ----

let dayLive = null;

async function showDayLive(name) {
  stopDayLive();
  $("day-full").href = `#live/${encodeURIComponent(name)}`;
  $("player").pause();
  $("player").hidden = true;
  $("day-live").hidden = false;
  $("go-live").hidden = true;
  $("now-playing").textContent = "Live";
  const token = dayLive = { stop() { this.stopped = true; } };
  try {
    const camera = await cameraNamed(name);
    if (dayLive !== token || token.stopped || !camera) return;
    // Live and recorded pictures take the same box, the camera's shape.
    if (camera.width > 0 && camera.height > 0) $("day-live").style.aspectRatio = $("player").style.aspectRatio = `${camera.width} / ${camera.height}`;
    dayLive = livePlayer($("day-live"), camera);
  } catch (error) { showError(error); }
}

// Stops the live picture; `recorded`: the recorded player shows instead, with a Live button.
function stopDayLive(recorded = true) {
  if (dayLive) dayLive.stop();
  dayLive = null;
  $("day-live").hidden = true;
  $("player").hidden = false;
  $("go-live").hidden = !recorded;
}

document.addEventListener("DOMContentLoaded", () => $("go-live").addEventListener("click", () => showDayLive(view.camera)));
