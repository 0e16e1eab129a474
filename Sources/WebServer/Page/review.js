// Vigil's page: motion events across cameras, newest first, to review one after another
// (#review?camera=NAME&day=YYYY-MM-DD&unreviewed=1). Uses app.js's helpers.
"use strict";

const PRE_ROLL = 5000;
const review = { key: null, events: [], next: null, selected: -1, loading: false, player: null, span: null, cameras: false };

function reviewURL(params) {
  const q = new URLSearchParams({ limit: "30" });
  if (params.get("camera")) q.set("camera", params.get("camera"));
  const [y, m, d] = (params.get("day") || "").split("-").map(Number);
  if (y && m && d) { q.set("from", new Date(y, m - 1, d).toISOString()); q.set("to", new Date(y, m - 1, d + 1).toISOString()); }
  if (params.get("unreviewed") === "1") q.set("unreviewed", "true");
  return `${api}/events?${q}`;
}

async function showReview(argument, params) {
  $("review-camera").value = params.get("camera") || "";
  $("review-day").value = params.get("day") || "";
  $("review-unreviewed").checked = params.get("unreviewed") === "1";
  if (!review.cameras) {
    try {
      const { cameras } = await getJSON(`${api}/cameras`);
      for (const c of cameras) $("review-camera").add(new Option(c.name, c.name));
      review.cameras = true;
      $("review-camera").value = params.get("camera") || "";
    } catch (error) { showError(error); }
  }
  const key = reviewURL(params);
  if (key === review.key) return;
  review.key = key;
  review.events = [];
  review.selected = -1;
  review.next = key;
  review.player.stop();
  $("review-list").replaceChildren();
  $("review-list").removeAttribute("aria-activedescendant");
  $("review-info").textContent = "";
  $("review-toggle").hidden = true;
  moreEvents();
}

async function moreEvents() {
  const url = review.next, key = review.key;
  if (!url || review.loading) return;
  review.loading = true;
  $("review-more").textContent = "Loading…";
  try {
    const page = await getJSON(url);
    if (key !== review.key) return;
    clearError();
    review.next = page.next;
    for (const e of page.events) { review.events.push(e); $("review-list").append(eventItem(e)); }
  } catch (error) { showError(error); } finally { review.loading = false; }
  if (key !== review.key) return;
  $("review-more").textContent = review.next ? "" : review.events.length ? "No older events." : "No events.";
  if (review.next && moreVisible()) moreEvents();
}

// The end of the list in sight (its own scroll on a desktop, the page's on a phone).
function moreVisible() {
  const more = $("review-more").getBoundingClientRect(), list = $("review-list").parentElement.getBoundingClientRect();
  return more.top < Math.min(innerHeight, list.bottom) + 200;
}

function eventItem(e) {
  const li = document.createElement("li");
  li.setAttribute("role", "option");
  li.setAttribute("aria-selected", "false");
  li.id = `event-${e.id}`;
  li.innerHTML = `<span class="picture"></span><span><b></b> <span class="when"></span><br><span class="what"></span> <span class="badge"></span></span>`;
  if (e.thumbnail) { const img = document.createElement("img"); img.alt = ""; img.loading = "lazy"; img.src = e.thumbnail; li.firstChild.append(img); }
  else li.firstChild.textContent = "no picture";
  const start = new Date(e.start);
  li.querySelector("b").textContent = e.camera;
  li.querySelector(".when").textContent = `${start.toLocaleDateString(undefined, { weekday: "short", day: "numeric", month: "short" })} ${clock(start)}`;
  li.querySelector(".what").textContent = `${e.duration_seconds != null ? `${e.duration_seconds} s` : e.end ? duration(Date.parse(e.end) - start) : "under way"} · ${Math.round(e.peak_area_percent ?? 0)} % moved${e.node ? ` · ${e.node}` : ""}`;
  li.addEventListener("click", () => select(review.events.indexOf(e)));
  markReviewed(li, e);
  return li;
}

function markReviewed(li, e) {
  li.classList.toggle("reviewed", e.reviewed);
  li.querySelector(".badge").textContent = e.reviewed ? "✓ reviewed" : "";
  if (review.events[review.selected] === e) $("review-toggle").setAttribute("aria-pressed", String(e.reviewed));
}

function select(index) {
  if (index < 0 || index >= review.events.length) return;
  const list = $("review-list"), old = list.children[review.selected], item = list.children[index];
  if (old) old.setAttribute("aria-selected", "false");
  item.setAttribute("aria-selected", "true");
  list.setAttribute("aria-activedescendant", item.id);
  item.scrollIntoView({ block: "nearest" });
  review.selected = index;
  openEvent(review.events[index]);
  if (index >= review.events.length - 3) moreEvents();
}

// Plays the event from its pre-roll, its span marked on the bar under the player.
async function openEvent(e) {
  const start = Date.parse(e.start), end = e.end ? Date.parse(e.end) : Date.now();
  const from = start - PRE_ROLL, to = end + PRE_ROLL;
  review.span = { from, to };
  $("review-mark").style.left = `${(start - from) / (to - from) * 100}%`;
  $("review-mark").style.width = `${Math.max(0.5, (end - start) / (to - from) * 100)}%`;
  $("review-now").style.left = "0%";
  $("review-toggle").hidden = session.role === "viewer";
  $("review-toggle").setAttribute("aria-pressed", String(e.reviewed));
  const what = `${e.camera}, motion at ${clock(new Date(start))}`;
  $("review-info").textContent = `${what}: loading…`;
  try {
    const { recordings } = await getJSON(`${api}/cameras/${encodeURIComponent(e.camera)}/recordings?${query(new Date(from), new Date(to))}`);
    if (review.events[review.selected] !== e) return;
    review.player.recordings = asRecordings(recordings);
    const playing = review.player.play(from);
    $("review-info").textContent = playing ? `${what} (${leadIn(Math.max(from, playing.from), start)})` : `${what}: no recording of it`;
  } catch (error) { showError(error); }
}

function onReviewTime(now) {
  const { from, to } = review.span;
  $("review-now").style.left = `${Math.min(100, Math.max(0, (now - from) / (to - from) * 100))}%`;
}

// Shown at once; put back if the server says no.
async function toggleReviewed() {
  const e = review.events[review.selected];
  if (!e) return;
  const item = $(`event-${e.id}`), was = e.reviewed;
  e.reviewed = !was;
  markReviewed(item, e);
  try {
    // Its own address: this node's index, or the site's catalogue (another node's event).
    // Only the mark: an event listed from the catalogue keeps the listing's id, whichever route answers.
    e.reviewed = (await postJSON(e.review_url, { reviewed: e.reviewed })).reviewed;
  } catch (error) {
    e.reviewed = was;
    showError(error);
  }
  markReviewed(item, e);
}

function onReviewKey(event) {
  if (currentView !== views.review || event.ctrlKey || event.metaKey || event.altKey) return;
  const tag = event.target.tagName;
  if (["INPUT", "SELECT", "TEXTAREA"].includes(tag)) return;
  const arrows = tag !== "VIDEO";
  const keys = {
    j: () => select(review.selected + 1), k: () => select(Math.max(0, review.selected - 1)),
    ArrowDown: arrows && (() => select(review.selected + 1)), ArrowUp: arrows && (() => select(Math.max(0, review.selected - 1))),
    Enter: event.target.id === "review-list" && (() => select(Math.max(0, review.selected))),
    " ": !["BUTTON", "VIDEO", "A"].includes(tag) && review.player.toggle,
    r: toggleReviewed,
  };
  if (!keys[event.key]) return;
  event.preventDefault();
  keys[event.key]();
}

function setFilter() {
  const q = new URLSearchParams();
  if ($("review-camera").value) q.set("camera", $("review-camera").value);
  if ($("review-day").value) q.set("day", $("review-day").value);
  if ($("review-unreviewed").checked) q.set("unreviewed", "1");
  location.hash = `#review${q.size ? `?${q}` : ""}`;
}

// Deferred: the page's elements are there.
{
  review.player = recordedPlayer($("review-video"), onReviewTime);
  $("review-filters").addEventListener("change", setFilter);
  $("review-filters").addEventListener("submit", (event) => event.preventDefault());
  $("review-toggle").addEventListener("click", toggleReviewed);
  document.addEventListener("keydown", onReviewKey);
  const more = () => { if (review.next && moreVisible()) moreEvents(); };
  $("review-list").parentElement.addEventListener("scroll", more, { passive: true });
  window.addEventListener("scroll", more, { passive: true });
}

views.review = { section: "review", show: showReview, hide: () => $("review-video").pause() };

// Where playing begins, said against the motion: the pre-roll's seconds when the recording has
// them, "as it began" when the recording starts with the motion, or how far into it otherwise.
function leadIn(begins, motion) {
  const seconds = Math.round((motion - begins) / 1000);
  const at = `from ${clock(new Date(begins))}`;
  if (seconds > 0) return `${at}, ${seconds} s before`;
  return seconds === 0 ? `${at}, as it began` : `${at}, ${-seconds} s into it`;
}
