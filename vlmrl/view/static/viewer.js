// vlmrl view: the page. Vanilla JS, no dependencies; talks to the JSON/image API in vlmrl/view/server.py.
"use strict";

const $ = (sel) => document.querySelector(sel);
const COLORS = ["#1f5fbf", "#c76a00", "#2e8b57", "#8e44ad", "#c0392b", "#16a085", "#7f8c8d", "#d4ac0d", "#34495e"];
const A_COLOR = "#1f5fbf", B_COLOR = "#c76a00";

const state = {
  info: null,
  episodes: [],        // summaries from /api/episodes
  view: [],            // filtered + sorted
  sort: { key: "id", dir: 1 },
  current: null,       // the loaded episode's series
  step: 0,
  playing: null,       // interval id
  mark: { start: null, stop: null },
  scorerA: null,
  scorerB: null,
  images: new Map(),   // "cam/step" -> Image of the current episode
  loadSeq: 0,
  loading: null,       // the id of the episode being fetched: keys and labels wait for it (none go to the last one)
};

// ------------------------------------------------------------------------------------------ fetching
async function api(path, options) {
  const res = await fetch(path, options);
  let body = null;
  try { body = await res.json(); } catch (e) { body = null; }
  if (!res.ok) {
    const msg = body && body.error ? body.error : `${res.status} ${res.statusText}`;
    throw new Error(msg);
  }
  return body;
}

function showBanner(el, text) {
  el.textContent = text || "";
  el.hidden = !text;
}

// ------------------------------------------------------------------------------------------ list
function labelOf(ep) {
  const whole = (ep.labels || []).find((l) => l.start === null);
  return whole ? whole.label : null;
}

function sortValue(ep, key) {
  const a = state.scorerA && ep.scores[state.scorerA], b = state.scorerB && ep.scores[state.scorerB];
  switch (key) {
    case "success": return ep.success === null ? -1 : ep.success ? 1 : 0;
    case "label": { const l = labelOf(ep); return l === "success" ? 2 : l === "failure" ? 1 : (ep.labels.length ? 0.5 : 0); }
    case "a_mean": return a && a.mean !== null ? a.mean : -1;
    case "a_max": return a && a.max !== null ? a.max : -1;
    case "b_mean": return b && b.mean !== null ? b.mean : -1;
    case "b_max": return b && b.max !== null ? b.max : -1;
    default: return ep[key];
  }
}

function matches(ep, tokens) {
  for (const tok of tokens) {
    const lab = labelOf(ep);
    if (/^\d+$/.test(tok)) { if (ep.id !== Number(tok)) return false; continue; }
    const cmp = tok.match(/^(steps|a|amax|b|bmax)([<>]=?)([\d.]+)$/);
    if (cmp) {
      const key = { steps: "steps", a: "a_mean", amax: "a_max", b: "b_mean", bmax: "b_max" }[cmp[1]];
      const v = sortValue(ep, key), t = Number(cmp[3]);
      const ok = cmp[2] === ">" ? v > t : cmp[2] === "<" ? v < t && v >= 0 : cmp[2] === ">=" ? v >= t : v <= t && v >= 0;
      if (!ok) return false;
      continue;
    }
    const ok = {
      success: ep.success === true, failure: ep.success === false, fail: ep.success === false,
      unknown: ep.success === null, damaged: !!ep.damaged, intact: !ep.damaged,
      labelled: ep.labels.length > 0, unlabelled: ep.labels.length === 0,
      good: lab === "success", bad: lab === "failure",
    }[tok];
    if (ok === undefined) continue;  // unknown words do not filter
    if (!ok) return false;
  }
  return true;
}

function fmt(v, digits = 3) { return v === null || v === undefined ? "–" : Number(v).toFixed(digits); }

function renderList() {
  const tokens = $("#filter").value.toLowerCase().split(/\s+/).filter(Boolean);
  const { key, dir } = state.sort;
  state.view = state.episodes.filter((ep) => matches(ep, tokens))
    .sort((x, y) => (sortValue(x, key) - sortValue(y, key)) * dir || x.id - y.id);
  const body = $("#episodes tbody");
  const rows = state.view.map((ep) => {
    const a = (state.scorerA && ep.scores[state.scorerA]) || {}, b = (state.scorerB && ep.scores[state.scorerB]) || {};
    const lab = labelOf(ep);
    const ranges = ep.labels.filter((l) => l.start !== null).length;
    const labText = (lab ? `<span class="tag-${lab === "success" ? "good" : "bad"}">${lab}</span>` : "") +
      (ranges ? ` <span class="muted">+${ranges}</span>` : "");
    const succ = ep.damaged ? "damaged" : ep.success === null ? "?" : ep.success ? "yes" : "no";
    const cls = [ep.damaged ? "damaged" : "", state.current && state.current.id === ep.id ? "selected" : ""].join(" ");
    return `<tr data-id="${ep.id}" class="${cls}" ${ep.damaged ? `title="${escapeHtml(ep.damaged)}"` : ""}>` +
      `<td>${ep.id}</td><td>${ep.steps}</td><td>${succ}</td><td>${labText}</td>` +
      `<td class="score-a">${fmt(a.mean)}</td><td class="score-a">${fmt(a.max)}</td>` +
      `<td class="score-b">${fmt(b.mean)}</td><td class="score-b">${fmt(b.max)}</td></tr>`;
  });
  body.innerHTML = rows.join("");
  $("#count").textContent = `${state.view.length} of ${state.episodes.length}`;
  document.querySelectorAll("#episodes th").forEach((th) => {
    th.classList.toggle("sorted-asc", th.dataset.key === key && dir > 0);
    th.classList.toggle("sorted-desc", th.dataset.key === key && dir < 0);
  });
}

function escapeHtml(s) {
  return String(s).replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" }[c]));
}

// ------------------------------------------------------------------------------------------ episode
function ready() {  // an episode is loaded and none is on its way: keys and labels act on it
  return state.current !== null && state.loading === null;
}

async function selectEpisode(id) {
  stop();
  const seq = ++state.loadSeq;
  const summary = state.episodes.find((e) => e.id === id);
  showBanner($("#episode-banner"), "");
  state.loading = id;
  $("#episode-title").textContent = `episode ${id} (loading)`;
  let data;
  try {
    data = await api(`/api/episodes/${id}`);
  } catch (err) {
    if (seq !== state.loadSeq) return;
    state.loading = null;
    $("#episode-title").textContent = `episode ${id}`;
    state.current = { id, steps: summary ? summary.steps : 0, groups: {}, labels: summary ? summary.labels : [], errors: {} };
    showBanner($("#episode-banner"), `episode ${id} cannot be shown: ${err.message}`);
    afterLoad();
    return;
  }
  if (seq !== state.loadSeq) return;
  state.loading = null;
  $("#episode-title").textContent = `episode ${id}`;
  state.current = data;
  const problems = [];
  if (data.damaged) problems.push(`episode ${id} is damaged: ${data.damaged}`);
  for (const [name, why] of Object.entries(data.errors || {})) problems.push(`${name} unreadable: ${why}`);
  showBanner($("#episode-banner"), problems.join(" | "));
  afterLoad();
}

function afterLoad() {
  const ep = state.current;
  state.step = Math.min(state.step, ep.steps);
  state.mark = { start: null, stop: null };
  $("#scrubber").max = String(ep.steps);
  $("#scrubber").value = String(state.step);
  state.images = new Map();
  buildCameras();
  prefetch(ep.id);
  renderList();
  const row = document.querySelector(`#episodes tr[data-id="${ep.id}"]`);
  if (row) row.scrollIntoView({ block: "nearest" });
  renderLabelChip();
  update();
}

function frameUrl(cam, id, step) {
  return `/api/frames/${encodeURIComponent(cam)}/${id}/${step}?s=${state.info.token}`;
}

function buildCameras() {
  const box = $("#cameras");
  box.innerHTML = "";
  const n = state.info.cameras.length;
  for (const cam of state.info.cameras) {
    const [h, w] = cam.shape;
    const scale = Math.max(1, Math.floor(Math.min(n > 1 ? 320 : 480, 4 * Math.max(w, 64)) / w));
    const fig = document.createElement("figure");
    const canvas = document.createElement("canvas");
    canvas.width = w * scale; canvas.height = h * scale;
    canvas.dataset.camera = cam.name;
    canvas.className = "frame";
    const cap = document.createElement("figcaption");
    cap.textContent = `${cam.name} (${w}x${h})`;
    fig.append(canvas, cap);
    box.append(fig);
  }
}

function image(cam, step) {
  const key = `${cam}/${step}`;
  let img = state.images.get(key);
  if (!img) {
    img = new Image();
    img.dataset.failed = "";
    const id = state.current.id;
    img.onload = () => { if (state.step === step && state.current && state.current.id === id) drawFrame(cam); };
    img.onerror = async () => {
      img.dataset.failed = "frame unreadable";
      try { await api(frameUrl(cam, id, step)); } catch (err) { img.dataset.failed = err.message; }
      if (state.step === step) drawFrame(cam);
    };
    img.src = frameUrl(cam, id, step);
    state.images.set(key, img);
  }
  return img;
}

async function prefetch(id) {
  // Load the episode's frames a few at a time, nearest to the cursor first, so scrubbing is smooth.
  const ep = state.current, seq = state.loadSeq;
  const order = [];
  for (let s = 0; s <= ep.steps; s++) order.push(s);
  order.sort((a, b) => Math.abs(a - state.step) - Math.abs(b - state.step));
  let i = 0;
  const worker = async () => {
    while (i < order.length && seq === state.loadSeq) {
      const s = order[i++];
      for (const cam of state.info.cameras) {
        const img = image(cam.name, s);
        if (!img.complete) await new Promise((r) => { img.addEventListener("load", r, { once: true }); img.addEventListener("error", r, { once: true }); });
      }
    }
  };
  await Promise.all([worker(), worker(), worker(), worker()]);
}

function drawFrame(cam) {
  const canvas = document.querySelector(`#cameras canvas[data-camera="${CSS.escape(cam)}"]`);
  if (!canvas || !state.current) return;
  const ctx = canvas.getContext("2d");
  const img = image(cam, state.step);
  ctx.imageSmoothingEnabled = false;
  if (img.dataset.failed) {
    ctx.fillStyle = "#3a1d1d"; ctx.fillRect(0, 0, canvas.width, canvas.height);
    ctx.fillStyle = "#ffb4a8"; ctx.font = "12px system-ui";
    wrapText(ctx, img.dataset.failed, 8, 18, canvas.width - 16, 15);
  } else if (img.complete && img.naturalWidth) {
    ctx.drawImage(img, 0, 0, canvas.width, canvas.height);
  }
}

function wrapText(ctx, text, x, y, width, lineHeight) {
  let line = "";
  for (const word of text.split(" ")) {
    const test = line ? `${line} ${word}` : word;
    if (ctx.measureText(test).width > width && line) { ctx.fillText(line, x, y); y += lineHeight; line = word; }
    else line = test;
  }
  if (line) ctx.fillText(line, x, y);
}

// ------------------------------------------------------------------------------------------ cursor
function clipAt(step, steps) {
  const L = state.info.clip_length, stride = state.info.clip_stride, span = L * stride;
  const start = Math.floor(Math.min(step, Math.max(steps - 1, 0)) / span) * span;
  const frames = [];
  for (let k = 0; k < L && start + k * stride <= steps; k++) frames.push(start + k * stride);
  return { start, stop: Math.min(start + span, steps), frames };
}

function setStep(step) {
  if (!state.current) return;
  state.step = Math.max(0, Math.min(state.current.steps, Math.round(step)));
  update();
}

function update() {
  const ep = state.current;
  if (!ep) return;
  $("#scrubber").value = String(state.step);
  for (const cam of state.info.cameras) drawFrame(cam.name);
  const clip = clipAt(state.step, ep.steps);
  const t = state.step / state.info.control_hz;
  $("#readout").textContent = `step ${state.step} / ${ep.steps}   t ${t.toFixed(2)} s   clip ${clip.start}..${clip.stop}`;
  drawPlots(clip);
  drawLabelTrack();
  const m = state.mark;
  $("#mark").textContent = m.start !== null || m.stop !== null ? `marked ${m.start ?? "?"}..${m.stop ?? "?"}` : "";
}

function play() {
  if (state.playing || !state.current) return stop();
  if (state.step >= state.current.steps) setStep(0);
  const hz = state.info.control_hz * Number($("#speed").value);
  $("#play").innerHTML = "&#10074;&#10074;";
  state.playing = setInterval(() => {
    if (state.step >= state.current.steps) return stop();
    setStep(state.step + 1);
  }, 1000 / hz);
}

function stop() {
  if (state.playing) clearInterval(state.playing);
  state.playing = null;
  $("#play").innerHTML = "&#9654;";
}

// ------------------------------------------------------------------------------------------ plots
function seriesOf(group, names) {
  const g = (state.current && state.current.groups[group]) || {};
  return (names || Object.keys(g)).filter((n) => g[n]).map((n, i) => ({ name: n, values: g[n], color: COLORS[i % COLORS.length] }));
}

function drawPlots(clip) {
  const ep = state.current;
  const progress = seriesOf("info", ["progress"]).map((s) => ({ ...s, name: "progress", color: "#9aa3ad", dash: [4, 3] }));
  for (const [id, sid, color] of [["#plot-a", state.scorerA, A_COLOR], ["#plot-b", state.scorerB, B_COLOR]]) {
    const s = sid ? seriesOf("scores", [sid]).map((x) => ({ ...x, name: `score ${sid}`, color, width: 2 })) : [];
    drawPlot($(id), [...progress, ...s], ep.steps, clip, [0, 1], s.length ? null : sid ? `no scores of ${sid} stored` : "no scorer");
  }
  const rewards = [...seriesOf("reward", ["reward"]).map((s) => ({ ...s, color: "#34495e" }))];
  if (state.scorerA) rewards.push(...seriesOf("aux_reward", [state.scorerA]).map((s) => ({ ...s, name: `aux ${s.name}`, color: A_COLOR })));
  if (state.scorerB && state.scorerB !== state.scorerA) rewards.push(...seriesOf("aux_reward", [state.scorerB]).map((s) => ({ ...s, name: `aux ${s.name}`, color: B_COLOR })));
  rewards.push(...seriesOf("priority").map((s) => ({ ...s, name: `priority ${s.name}`, color: "#8e44ad", dash: [2, 2] })));
  drawPlot($("#plot-reward"), rewards, ep.steps, clip);
  drawPlot($("#plot-joints"), seriesOf("joints"), ep.steps, clip);
  drawPlot($("#plot-actions"), seriesOf("actions"), ep.steps, clip);
  drawPlot($("#plot-info"), seriesOf("info"), ep.steps, clip);
}

function drawPlot(canvas, series, steps, clip, yRange, note) {
  const dpr = window.devicePixelRatio || 1;
  const w = canvas.clientWidth, h = canvas.clientHeight;
  if (canvas.width !== Math.round(w * dpr)) { canvas.width = Math.round(w * dpr); canvas.height = Math.round(h * dpr); }
  const ctx = canvas.getContext("2d");
  ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  ctx.clearRect(0, 0, w, h);
  const left = 40, right = 8, top = 16, bottom = 16;
  const X = (s) => left + (steps > 0 ? (s / steps) * (w - left - right) : 0);
  let lo = Infinity, hi = -Infinity;
  if (yRange) [lo, hi] = yRange;
  else for (const s of series) for (const v of s.values) if (v !== null) { lo = Math.min(lo, v); hi = Math.max(hi, v); }
  if (!isFinite(lo)) { lo = 0; hi = 1; }
  if (hi - lo < 1e-9) { lo -= 0.5; hi += 0.5; }
  const Y = (v) => top + (1 - (v - lo) / (hi - lo)) * (h - top - bottom);
  canvas._x = { left, right, steps, w };
  // clip window under the cursor, labelled ranges
  ctx.fillStyle = "rgba(255, 214, 102, 0.35)";
  ctx.fillRect(X(clip.start), top, Math.max(2, X(clip.stop) - X(clip.start)), h - top - bottom);
  ctx.strokeStyle = "rgba(180, 130, 0, 0.9)";
  for (const f of clip.frames) { ctx.beginPath(); ctx.moveTo(X(f), h - bottom); ctx.lineTo(X(f), h - bottom + 5); ctx.stroke(); }
  for (const l of (state.current.labels || []).filter((l) => l.start !== null)) {
    ctx.fillStyle = l.label === "success" ? "rgba(46,139,87,0.5)" : "rgba(192,57,43,0.5)";
    ctx.fillRect(X(l.start), h - bottom - 4, Math.max(2, X(l.stop) - X(l.start)), 4);
  }
  // axes
  ctx.strokeStyle = "#e3e7eb"; ctx.fillStyle = "#6b7682"; ctx.font = "10px system-ui"; ctx.lineWidth = 1;
  for (const v of [lo, (lo + hi) / 2, hi]) {
    ctx.beginPath(); ctx.moveTo(left, Y(v)); ctx.lineTo(w - right, Y(v)); ctx.stroke();
    ctx.fillText(tick(v, hi - lo), 2, Y(v) + 3);
  }
  // series
  for (const s of series) {
    ctx.strokeStyle = s.color; ctx.lineWidth = s.width || 1.25; ctx.setLineDash(s.dash || []);
    ctx.beginPath();
    let pen = false;
    s.values.forEach((v, i) => {
      if (v === null) { pen = false; return; }
      if (pen) ctx.lineTo(X(i), Y(v)); else { ctx.moveTo(X(i), Y(v)); pen = true; }
    });
    ctx.stroke();
  }
  ctx.setLineDash([]);
  // cursor
  ctx.strokeStyle = "#111"; ctx.lineWidth = 1;
  ctx.beginPath(); ctx.moveTo(X(state.step), top - 4); ctx.lineTo(X(state.step), h - bottom); ctx.stroke();
  // legend with values at the cursor
  let x = left;
  ctx.font = "11px system-ui";
  for (const s of series.slice(0, 8)) {
    const v = s.values[Math.min(state.step, s.values.length - 1)];
    const text = `${s.name} ${v === null || v === undefined ? "–" : Number(v).toPrecision(3)}`;
    ctx.fillStyle = s.color; ctx.fillText(text, x, 11);
    x += ctx.measureText(text).width + 12;
  }
  if (series.length > 8) { ctx.fillStyle = "#6b7682"; ctx.fillText(`+${series.length - 8} more`, x, 11); }
  if (note || !series.length) { ctx.fillStyle = "#6b7682"; ctx.fillText(note || "nothing stored", left + 8, h / 2); }
}

function tick(v, span) {
  // As many decimals as the axis' span needs: 0.5 on a 0..1 axis, 0.006 on a 0..0.01 one.
  const digits = Math.max(0, Math.min(6, 1 - Math.floor(Math.log10(span))));
  return Math.abs(v) < span * 1e-6 ? "0" : v.toFixed(digits);
}

function stepFromEvent(canvas, ev) {
  const g = canvas._x;
  if (!g) return null;
  const rect = canvas.getBoundingClientRect();
  const frac = (ev.clientX - rect.left - g.left) / (g.w - g.left - g.right);
  return Math.round(Math.max(0, Math.min(1, frac)) * g.steps);
}

// ------------------------------------------------------------------------------------------ labels
function renderLabelChip() {
  const chip = $("#episode-label");
  const lab = state.current ? labelOf(state.current) : null;
  chip.className = "chip" + (lab === "success" ? " good" : lab === "failure" ? " bad" : "");
  chip.textContent = lab ? `labelled ${lab}` : "";
}

function drawLabelTrack() {
  const canvas = $("#label-track"), ep = state.current;
  const dpr = window.devicePixelRatio || 1, w = canvas.clientWidth, h = canvas.clientHeight;
  canvas.width = Math.round(w * dpr); canvas.height = Math.round(h * dpr);
  const ctx = canvas.getContext("2d");
  ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  ctx.fillStyle = "#eef1f4"; ctx.fillRect(0, 0, w, h);
  const left = 40, right = 8, steps = Math.max(ep.steps, 1);
  const X = (s) => left + (s / steps) * (w - left - right);
  canvas._x = { left, right, steps: ep.steps, w };
  const lab = labelOf(ep);
  if (lab) { ctx.fillStyle = lab === "success" ? "rgba(46,139,87,0.25)" : "rgba(192,57,43,0.25)"; ctx.fillRect(left, 2, w - left - right, h - 4); }
  for (const l of (ep.labels || []).filter((l) => l.start !== null)) {
    ctx.fillStyle = l.label === "success" ? "#2e8b57" : "#c0392b";
    ctx.fillRect(X(l.start), 5, Math.max(2, X(l.stop) - X(l.start)), h - 10);
  }
  const m = state.mark;
  if (m.start !== null || m.stop !== null) {
    const a = m.start ?? state.step, b = m.stop ?? state.step + 1;
    ctx.strokeStyle = "#1d2329"; ctx.setLineDash([3, 2]);
    ctx.strokeRect(X(Math.min(a, b)), 3, Math.max(2, X(Math.max(a, b)) - X(Math.min(a, b))), h - 6);
    ctx.setLineDash([]);
  }
  ctx.fillStyle = "#111"; ctx.fillRect(X(state.step) - 0.5, 0, 1.5, h);
  ctx.fillStyle = "#6b7682"; ctx.font = "10px system-ui"; ctx.fillText("labels", 2, 14);
}

async function saveLabel(body) {
  if (!ready()) return;  // a label never lands on the episode being left
  const ep = state.current;
  try {
    const res = await api("/api/labels", { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ episode: ep.id, ...body }) });
    applyLabels(ep.id, res.labels);
    $("#saved").textContent = `saved ${res.saved.label} (${res.saved.start === null ? "episode" : `steps ${res.saved.start}..${res.saved.stop}`}) by ${res.saved.annotator}`;
  } catch (err) {
    showBanner($("#banner"), `label not saved: ${err.message}`);
  }
}

async function removeLabel(start, stop) {
  if (!ready()) return;
  const ep = state.current;
  const q = start === null ? "" : `&start=${start}&stop=${stop}`;
  try {
    const res = await api(`/api/labels?episode=${ep.id}${q}`, { method: "DELETE" });
    applyLabels(ep.id, res.labels);
    $("#saved").textContent = "label removed";
  } catch (err) {
    $("#saved").textContent = err.message;
  }
}

function applyLabels(id, labels) {
  const summary = state.episodes.find((e) => e.id === id);
  if (summary) summary.labels = labels;
  if (state.current && state.current.id === id) state.current.labels = labels;
  renderList();
  renderLabelChip();
  update();
}

function labelRange(verdict) {
  const m = state.mark;
  const a = m.start ?? state.step, b = m.stop ?? state.step + 1;
  const start = Math.min(a, b), stop = Math.max(a, b);
  state.mark = { start: null, stop: null };
  saveLabel({ label: verdict, start, stop: Math.max(stop, start + 1) });
}

function clearRangesAtCursor() {
  const hits = (state.current.labels || []).filter((l) => l.start !== null && l.start <= state.step && state.step < l.stop);
  for (const l of hits) removeLabel(l.start, l.stop);
}

const ACTIONS = {
  "ep-success": () => saveLabel({ label: "success", start: null, stop: null }),
  "ep-failure": () => saveLabel({ label: "failure", start: null, stop: null }),
  "ep-clear": () => removeLabel(null, null),
  "mark-start": () => { state.mark.start = state.step; update(); },
  "mark-stop": () => { state.mark.stop = state.step + 1; update(); },
  "range-success": () => labelRange("success"),
  "range-failure": () => labelRange("failure"),
  "range-clear": () => clearRangesAtCursor(),
};

// ------------------------------------------------------------------------------------------ wiring
function moveEpisode(delta) {
  if (!state.view.length) return;
  const at = state.loading ?? (state.current ? state.current.id : null);  // from the episode asked for last
  const i = at === null ? -1 : state.view.findIndex((e) => e.id === at);
  const next = state.view[Math.max(0, Math.min(state.view.length - 1, i + delta))];
  if (next) selectEpisode(next.id);
}

function cycleScorer(which) {
  const list = [null, ...state.info.scorers];
  const key = which === "a" ? "scorerA" : "scorerB";
  state[key] = list[(list.indexOf(state[key]) + 1) % list.length];
  $(`#scorer-${which}`).value = state[key] || "";
  renderList();
  update();
}

function onKey(ev) {
  if (ev.target.tagName === "INPUT" && ev.target.type !== "range" || ev.target.tagName === "SELECT") {
    if (ev.key === "Escape") ev.target.blur();
    return;
  }
  if (ev.ctrlKey || ev.metaKey || ev.altKey) return;
  const k = ev.key;
  const help = $("#help");
  if (k === "?") { help.hidden = !help.hidden; return ev.preventDefault(); }
  if (k === "Escape") { help.hidden = true; return; }
  const map = {
    " ": play, ArrowRight: () => setStep(state.step + (ev.shiftKey ? 10 : 1)),
    ArrowLeft: () => setStep(state.step - (ev.shiftKey ? 10 : 1)),
    Home: () => setStep(0), End: () => setStep(state.current ? state.current.steps : 0),
    ArrowDown: () => moveEpisode(1), j: () => moveEpisode(1), ArrowUp: () => moveEpisode(-1), k: () => moveEpisode(-1),
    s: ACTIONS["ep-success"], f: ACTIONS["ep-failure"], x: ACTIONS["ep-clear"],
    "[": ACTIONS["mark-start"], "]": ACTIONS["mark-stop"],
    S: ACTIONS["range-success"], F: ACTIONS["range-failure"], X: ACTIONS["range-clear"],
    "1": () => cycleScorer("a"), "2": () => cycleScorer("b"), "/": () => $("#filter").focus(),
  };
  const fn = map[k];
  if (!fn) return;
  ev.preventDefault();
  if (ev.target.type === "range") ev.target.blur();
  if (!ready() && k !== "/" && !["ArrowDown", "j", "ArrowUp", "k"].includes(k)) return;
  fn();
}

function wire() {
  $("#episodes thead").addEventListener("click", (ev) => {
    const key = ev.target.dataset.key;
    if (!key) return;
    state.sort = { key, dir: state.sort.key === key ? -state.sort.dir : key === "id" ? 1 : -1 };
    renderList();
  });
  $("#episodes tbody").addEventListener("click", (ev) => {
    const tr = ev.target.closest("tr");
    if (tr) selectEpisode(Number(tr.dataset.id));
  });
  $("#filter").addEventListener("input", renderList);
  $("#scrubber").addEventListener("input", (ev) => { stop(); setStep(Number(ev.target.value)); });
  $("#play").addEventListener("click", play);
  $("#speed").addEventListener("change", () => { if (state.playing) { stop(); play(); } });
  $("#help-button").addEventListener("click", () => { $("#help").hidden = false; });
  $("#help").addEventListener("click", () => { $("#help").hidden = true; });
  document.querySelectorAll("#label-tools button").forEach((b) => b.addEventListener("click", () => { if (ready()) ACTIONS[b.dataset.act](); }));
  for (const which of ["a", "b"]) {
    $(`#scorer-${which}`).addEventListener("change", (ev) => {
      state[which === "a" ? "scorerA" : "scorerB"] = ev.target.value || null;
      renderList();
      update();
    });
  }
  for (const canvas of document.querySelectorAll(".plot-box canvas, #label-track")) {
    let dragging = false;
    const go = (ev) => { const s = stepFromEvent(canvas, ev); if (s !== null) { stop(); setStep(s); } };
    canvas.addEventListener("mousedown", (ev) => { dragging = true; go(ev); });
    canvas.addEventListener("mousemove", (ev) => { if (dragging) go(ev); });
    window.addEventListener("mouseup", () => { dragging = false; });
  }
  document.addEventListener("keydown", onKey);
  window.addEventListener("resize", update);
}

async function start() {
  wire();
  try {
    state.info = await api("/api/info");
  } catch (err) {
    showBanner($("#banner"), `the viewer cannot read the store: ${err.message}`);
    return;
  }
  const info = state.info;
  $("#store").textContent = `${info.path} (${info.episodes} episodes${info.damaged ? `, ${info.damaged} damaged` : ""})`;
  $("#task").textContent = info.task;
  $("#annotator").textContent = `annotator: ${info.annotator}`;
  $("#labels-path").textContent = info.labels_path;
  state.scorerA = info.scorers[0] || null;
  state.scorerB = info.scorers[1] || info.scorers[0] || null;
  for (const which of ["a", "b"]) {
    const sel = $(`#scorer-${which}`);
    sel.innerHTML = `<option value="">(none)</option>` + info.scorers.map((s) => `<option>${escapeHtml(s)}</option>`).join("");
    sel.value = (which === "a" ? state.scorerA : state.scorerB) || "";
  }
  const notes = [];
  if (info.damaged) notes.push(`${info.damaged} damaged episode(s): shown in red, their readable parts still open`);
  const skipped = Object.entries(info.skipped || {});
  if (skipped.length) notes.push(`${skipped.length} episode(s) could not be read and are left out (episode ${skipped[0][0]}: ${skipped[0][1]})`);
  showBanner($("#banner"), notes.join(" | "));
  try {
    state.episodes = (await api("/api/episodes?refresh=1")).episodes;  // a reload shows a live run's new episodes
  } catch (err) {
    showBanner($("#banner"), `the episode list cannot be read: ${err.message}`);
    return;
  }
  renderList();
  const first = state.view.find((e) => !e.damaged) || state.view[0];
  if (first) await selectEpisode(first.id);
  document.body.dataset.ready = "1";
}

start();
