// metasched dashboard: polls GET /v1/dashboard with the bearer token and redraws with plain SVG.
// No third-party code. Every piece of data is inserted with textContent (job names are user input).
"use strict";

const POLL_MS = 2000;
const COLORS = { queued: "#9e9e9e", running: "#1e88e5", done: "#43a047", failed: "#e53935",
                 dep_failed: "#ef9a9a", cancelled: "#ffb300" };
const SVGNS = "http://www.w3.org/2000/svg";
let timer = null;

function token() {
  const m = /token=([^&]+)/.exec(window.location.hash);
  if (m) { sessionStorage.setItem("metasched-token", decodeURIComponent(m[1])); history.replaceState(null, "", "/dashboard"); }
  return sessionStorage.getItem("metasched-token") || "";
}

function el(tag, attrs, text) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
  if (text !== undefined && text !== null) e.textContent = String(text);
  return e;
}

function svg(tag, attrs, text) {
  const e = document.createElementNS(SVGNS, tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
  if (text !== undefined) e.textContent = String(text);
  return e;
}

function fmtTime(t) { return t == null ? "" : new Date(t * 1000).toLocaleTimeString(); }
function fmtDur(s) {
  if (s == null) return "";
  if (s < 60) return s.toFixed(1) + " s";
  if (s < 3600) return (s / 60).toFixed(1) + " min";
  return (s / 3600).toFixed(1) + " h";
}

// A site's state as the site manager recorded it: "up", or "down since HH:MM:SS: why" in red.
function reach(r) {
  if (!r || r.state !== "down") return r ? r.state : "";
  const since = r.since ? " since " + new Date(r.since * 1000).toLocaleTimeString() : "";
  return { text: "down" + since + (r.error ? ": " + r.error : ""), cls: "st-failed" };
}

function table(id, head, rows) {
  const t = document.getElementById(id);
  t.replaceChildren();
  const tr = el("tr");
  for (const h of head) tr.appendChild(el("th", {}, h));
  t.appendChild(tr);
  for (const r of rows) {
    const row = el("tr");
    for (const c of r) {
      if (c && typeof c === "object") row.appendChild(el("td", { class: c.cls || "" }, c.text));
      else row.appendChild(el("td", {}, c));
    }
    t.appendChild(row);
  }
}

function kv(obj) { return Object.entries(obj || {}).sort().map(([k, v]) => k + "=" + v).join(" "); }

function axis(g, x0, x1, y, t0, t1) {
  g.appendChild(svg("line", { x1: x0, x2: x1, y1: y, y2: y, stroke: "#999" }));
  const span = Math.max(t1 - t0, 1e-9);
  for (let i = 0; i <= 4; i++) {
    const x = x0 + (x1 - x0) * i / 4;
    g.appendChild(svg("line", { x1: x, x2: x, y1: y, y2: y + 4, stroke: "#999" }));
    g.appendChild(svg("text", { x: x, y: y + 15, "text-anchor": "middle" }, "+" + fmtDur(span * i / 4)));
  }
}

function drawGantt(data) {
  const box = document.getElementById("gantt");
  const jobs = data.jobs.filter(j => j.start_at != null && j.site);
  const lanes = [];  // one lane per (site, placeholder)
  const laneOf = new Map();
  for (const j of jobs.slice().sort((a, b) => (a.site + a.placeholder).localeCompare(b.site + b.placeholder))) {
    const key = j.site + "\u0000" + (j.placeholder || "");
    if (!laneOf.has(key)) { laneOf.set(key, lanes.length); lanes.push({ site: j.site, ph: j.placeholder || "" }); }
  }
  const W = Math.max(box.clientWidth - 4, 600), left = 190, right = 10, laneH = 14;
  const H = Math.max(lanes.length, 1) * laneH + 40;
  const s = svg("svg", { width: W, height: H, id: "gantt-svg" });
  if (!jobs.length) {
    s.appendChild(svg("text", { x: 10, y: 20 }, "no job has started yet"));
    box.replaceChildren(s);
    return;
  }
  const t0 = Math.min(...jobs.map(j => j.start_at));
  const t1 = Math.max(data.now, ...jobs.map(j => j.end_at || data.now));
  const X = t => left + (W - left - right) * (t - t0) / Math.max(t1 - t0, 1e-9);
  let prevSite = null;
  lanes.forEach((l, i) => {
    const y = 10 + i * laneH;
    if (l.site !== prevSite) {
      s.appendChild(svg("line", { x1: 0, x2: W, y1: y, y2: y, stroke: "#ccc" }));
      s.appendChild(svg("text", { x: 4, y: y + 11, "font-weight": "bold" }, l.site));
      prevSite = l.site;
    }
    s.appendChild(svg("text", { x: 80, y: y + 11, fill: "#777" }, l.ph.slice(-16)));
  });
  for (const j of jobs) {
    const i = laneOf.get(j.site + "\u0000" + (j.placeholder || ""));
    const x = X(j.start_at), w = Math.max(X(j.end_at || data.now) - x, 1.5);
    const r = svg("rect", { x: x, y: 11 + i * laneH, width: w, height: laneH - 3, fill: COLORS[j.state] || "#555",
                            class: "gantt-bar", "data-job": j.id });
    r.appendChild(svg("title", {}, (j.name || j.id) + " @" + j.site + " " + j.state + " " +
                      fmtDur((j.end_at || data.now) - j.start_at)));
    s.appendChild(r);
    if (w > 46) {
      s.appendChild(svg("text", { x: x + 3, y: 8 + (i + 1) * laneH - 1, fill: "#fff" }, String(j.name || j.id).slice(0, Math.floor(w / 7))));
    }
  }
  const g = svg("g");
  axis(g, left, W - right, H - 25, t0, t1);
  s.appendChild(g);
  box.replaceChildren(s);
}

function plot(id, points, step, yLabel) {
  const box = document.getElementById(id);
  const W = Math.max(box.clientWidth - 4, 300), H = 180, left = 50, right = 10, top = 10, bottom = 28;
  const s = svg("svg", { width: W, height: H, id: id + "-svg" });
  if (!points.length) {
    s.appendChild(svg("text", { x: 10, y: 20 }, "nothing yet"));
    box.replaceChildren(s);
    return;
  }
  const t0 = Math.min(...points.map(p => p[0])), t1 = Math.max(...points.map(p => p[0]), t0 + 1e-9);
  const ymax = Math.max(...points.map(p => p[1]), 1e-9);
  const X = t => left + (W - left - right) * (t - t0) / (t1 - t0 || 1);
  const Y = v => top + (H - top - bottom) * (1 - v / ymax);
  s.appendChild(svg("line", { x1: left, x2: left, y1: top, y2: H - bottom, stroke: "#999" }));
  s.appendChild(svg("text", { x: left - 4, y: top + 8, "text-anchor": "end" }, step ? ymax : fmtDur(ymax)));
  s.appendChild(svg("text", { x: left - 4, y: H - bottom, "text-anchor": "end" }, "0"));
  s.appendChild(svg("text", { x: left + 4, y: top + 8, fill: "#777" }, yLabel));
  const g = svg("g");
  axis(g, left, W - right, H - bottom, t0, t1);
  s.appendChild(g);
  if (step) {
    let d = "M" + X(points[0][0]) + "," + Y(0);
    for (const [t, v] of points) d += " H" + X(t) + " V" + Y(v);
    s.appendChild(svg("path", { d: d, fill: "none", stroke: "#43a047", "stroke-width": 2 }));
  } else {
    for (const [t, v] of points) s.appendChild(svg("circle", { cx: X(t), cy: Y(v), r: 3, fill: "#1e88e5" }));
  }
  box.replaceChildren(s);
}

function render(data) {
  const counts = document.getElementById("counts");
  counts.replaceChildren();
  for (const k of ["ready", "queued", "running", "done", "failed", "dep_failed", "cancelled"]) {
    counts.appendChild(el("span", { class: "pill st-" + k, id: "count-" + k }, k + ": " + (data.counts[k] || 0)));
  }
  document.getElementById("policy").textContent = "claim policy: " + (data.policy || "?");
  table("licences", ["licence", "held", "global limit", "per site: held / site limit"],
        (data.licences || []).map(l => [l.name,
          { text: String(l.held), cls: l.copies != null && l.held >= l.copies ? "full" : "" },
          l.copies ?? "none",
          Object.entries(l.sites).map(([s, [n, cap]]) => s + " " + n + "/" + (cap ?? "-")).join("  ")]));
  table("sites", ["site", "state", "adapter", "target", "placeholders", "throttle decisions", "running jobs",
                   "done jobs"],
        data.sites.map(s => [s.name, reach(s.reach), s.adapter, s.target ?? "", kv(s.placeholders),
                             kv(s.decisions), s.running_jobs, s.done_jobs]));
  const active = data.placeholders.filter(p => ["submitted", "queued", "running"].includes(p.state));
  const ended = data.placeholders.filter(p => !active.includes(p)).slice(-50);
  table("placeholders", ["placeholder", "site", "batch id", "state", "queued for", "decision", "jobs run"],
        active.concat(ended).map(p => [p.id, p.site, p.batch_id || "",
          { text: p.state, cls: "st-" + p.state },
          p.wait_s != null ? fmtDur(p.wait_s) : (p.started_at ? "" : fmtDur(data.now - p.submitted_at) + "…"),
          p.decision || "", p.jobs_run]));
  table("jobs", ["id", "name", "state", "site", "after", "submitted", "started", "ended", "attempts", "reason"],
        data.jobs.slice().reverse().map(j => [j.id, j.name || "", { text: j.state, cls: "st-" + j.state },
          j.site || "", j.after.join(",") + (j.pending_deps ? " (" + j.pending_deps + " pending)" : ""),
          fmtTime(j.submit_at), fmtTime(j.start_at), fmtTime(j.end_at), j.attempts, j.reason]));
  drawGantt(data);
  const done = data.jobs.filter(j => j.state === "done" && j.end_at != null).map(j => j.end_at).sort((a, b) => a - b);
  plot("throughput", done.map((t, i) => [t, i + 1]), true, "jobs done");
  plot("wait", data.jobs.filter(j => j.start_at != null).map(j => [j.start_at, Math.max(0, j.start_at - j.submit_at)]),
       false, "wait");
  document.body.dataset.jobs = String(data.jobs.length);
}

async function poll() {
  const status = document.getElementById("status");
  try {
    const resp = await fetch("/v1/dashboard", { headers: { Authorization: "Bearer " + token() } });
    if (resp.status === 401) {
      status.textContent = "token refused: paste the server token or the dashboard token";
      status.className = "error";
      document.getElementById("login").style.display = "";
      return;
    }
    if (!resp.ok) throw new Error("HTTP " + resp.status);
    const data = await resp.json();
    render(data);
    status.textContent = "updated " + fmtTime(data.now) + (data.truncated ? " (newest jobs only)" : "");
    status.className = "";
    document.getElementById("login").style.display = "none";
  } catch (err) {
    status.textContent = "server unreachable: " + err.message;
    status.className = "error";
  } finally {
    clearTimeout(timer);
    timer = setTimeout(poll, POLL_MS);
  }
}

document.getElementById("login").addEventListener("submit", ev => {
  ev.preventDefault();
  sessionStorage.setItem("metasched-token", document.getElementById("token").value.trim());
  poll();
});
poll();
