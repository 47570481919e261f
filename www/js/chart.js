// The dashboard's charts. Line charts (loss, throughput, the cluster's history) are drawn by
// dygraphs, the library Debian keeps as libjs-dygraphs: ringmasterd serves it from
// /usr/share/javascript under /vendor/ and index.html loads it (window.Dygraph). It brings
// the hover (the values of the point under the pointer), drag to zoom (across: the x range,
// up or down: the y range), double-click or the Reset button to unzoom. The What-if page's
// bar chart of a few policies is a small SVG of our own below (a category chart: nothing to
// zoom; each bar says its value on hover).

const NS = "http://www.w3.org/2000/svg";

function s(tag, attrs, text) {
  const el = document.createElementNS(NS, tag);
  for (const [k, v] of Object.entries(attrs || {})) el.setAttribute(k, String(v));
  if (text !== undefined) el.textContent = text;
  return el;
}

function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
}

// Round tick values covering [lo, hi], about n of them.
export function ticks(lo, hi, n = 5) {
  if (!(hi > lo)) return [lo];
  const raw = (hi - lo) / n;
  const mag = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 2.5, 5, 10].map((m) => m * mag).find((st) => st >= raw) || raw;
  const out = [];
  for (let v = Math.ceil(lo / step) * step; v <= hi + step * 1e-9; v += step)
    out.push(Number(v.toPrecision(12)));
  return out;
}

function fmt(v) {
  const a = Math.abs(v);
  if (a !== 0 && (a >= 1e5 || a < 1e-3)) return v.toExponential(1);
  return String(Number(v.toPrecision(4)));
}

// The series' colours, as style.css gives their legend keys (s0, s1, s2; total).
const COLORS = ["#2f52c4", "#d9822b", "#3f8f5a", "#8c5bd0"];
const GREY = "#9aa1b0";

// "#rrggbb" as rgba() at 35 % opacity.
function translucent(hex) {
  const n = parseInt(hex.slice(1), 16);
  return `rgba(${n >> 16}, ${(n >> 8) & 255}, ${n & 255}, 0.35)`;
}

// dygraphs' own legend writes inline styles, which the Content-Security-Policy refuses
// (style-src 'self'): the charts go without it and show the hovered values themselves.
const Dygraph = window.Dygraph;
if (Dygraph) Dygraph.PLUGINS = Dygraph.PLUGINS.filter((p) => p !== Dygraph.Plugins.Legend);

// The zoom a user chose, by opts.zoomKey, so that a chart redrawn with newer data keeps it.
const zooms = new Map();

// The graphs drawn, by their div. Each listens to the window's resizes until destroyed: those
// whose figure the page replaced (a redraw, another page) are destroyed before the next one.
const drawn = new Map();

function sweep() {
  for (const [div, g] of drawn)
    if (!div.isConnected) {
      g.destroy();
      drawn.delete(div);
    }
}

// One row per distinct x: [x, y of series 0 or null, y of series 1 or null, ...], by x.
export function chartRows(series) {
  const rows = new Map();
  series.forEach((se, i) => {
    for (const [x, y] of se.points) {
      if (!Number.isFinite(x)) continue;
      if (!rows.has(x)) rows.set(x, [x, ...series.map(() => null)]);
      if (Number.isFinite(y)) rows.get(x)[i + 1] = y;
    }
  });
  return [...rows.values()].sort((a, b) => a[0] - b[0]);
}

function seriesOptions(se, i) {
  const cls = se.cls || "";
  return {
    // "under": a wide translucent band that the lines drawn after it show through
    color: /\btotal\b/.test(cls) ? GREY : /\bunder\b/.test(cls) ? translucent(COLORS[i % COLORS.length])
      : COLORS[i % COLORS.length],
    stepPlot: !!se.step,
    drawPoints: !!se.dots,
    pointSize: 2.5,
    strokeWidth: /\bunder\b/.test(cls) ? 6 : 2,
    strokePattern: /\bfit\b/.test(cls) ? [6, 4] : /\btotal\b/.test(cls) ? [4, 3] : null,
  };
}

// The text of the hover line: "X label x · series: y · ...".
function hoverText(opts, x, points) {
  const xs = (opts.xFormat || fmt)(x) + (opts.xLabel ? " " + opts.xLabel : "");
  const ys = points.filter((p) => Number.isFinite(p.yval)).map((p) => p.name + ": " + fmt(p.yval));
  return [xs, ...ys].join(" · ");
}

const HINT = "hover for values · drag across (or up and down) to zoom · double-click to reset";

function options(series, opts, parts) {
  const so = {};
  series.forEach((se, i) => { so[se.label] = seriesOptions(se, i); });
  const saved = opts.zoomKey ? zooms.get(opts.zoomKey) : null;
  return {
    labels: ["x", ...series.map((se) => se.label)],
    series: so,
    colors: series.map((se, i) => so[se.label].color),
    xlabel: opts.xLabel || "",
    ylabel: opts.yLabel || "",
    includeZero: opts.yMin === 0,
    connectSeparatedPoints: true,
    highlightCircleSize: 4,
    axisLabelFontSize: 11,
    gridLineColor: "#eceef2",
    axisLineColor: GREY,
    xRangePad: 4,
    dateWindow: saved ? saved.x : null,
    valueRange: saved ? saved.y : null,
    axes: {
      x: { axisLabelFormatter: (v) => (opts.xFormat || fmt)(v), valueFormatter: (v) => (opts.xFormat || fmt)(v) },
      y: { axisLabelFormatter: (v) => fmt(v), valueFormatter: (v) => fmt(v), axisLabelWidth: 44 },
    },
    highlightCallback: (e, x, points) => { parts.hover.textContent = hoverText(opts, x, points); },
    unhighlightCallback: () => { parts.hover.textContent = HINT; },
    zoomCallback: () => zoomed(parts.graph, opts, parts.reset),
  };
}

// After a zoom or its reset: the Reset button, and the zoom kept for the next drawing.
function zoomed(g, opts, reset) {
  if (!g) return;
  const x = g.isZoomed("x") ? g.xAxisRange() : null, y = g.isZoomed("y") ? g.yAxisRange() : null;
  reset.hidden = !(x || y);
  if (!opts.zoomKey) return;
  if (x || y) zooms.set(opts.zoomKey, { x, y });
  else zooms.delete(opts.zoomKey);
}

// Calls f once el is in the document (dygraphs measures its box), trying for a few seconds
// (lineChart calls it after the caller has had the chance to insert the figure).
function whenAttached(el, f, tries = 300) {
  if (el.isConnected) f();
  else if (tries > 0) requestAnimationFrame(() => whenAttached(el, f, tries - 1));
}

// series: [{label, points: [[x, y], ...], cls? ("fit": dashed, "total": grey dashed, "under":
// wide), dots?, step?}]; opts: {xLabel, yLabel, xFormat, yMin (0: the y axis includes 0),
// title, zoomKey (a zoom is kept across charts drawn with the same key)}. Returns a
// <figure class="chart line"> whose graph property is the Dygraph once it is drawn (it is
// drawn once the figure is in the document).
export function lineChart(series, opts = {}) {
  const fig = el("figure", "chart line");
  const rows = chartRows(series);
  if (!Dygraph || rows.length === 0) {
    fig.append(el("p", "state-msg error", !Dygraph
      ? "The chart library is missing: install Debian's libjs-dygraphs (ringmasterd serves it from /usr/share/javascript)."
      : "Nothing to draw."));
    return fig;
  }
  const hover = el("div", "chart-hover muted small", HINT);
  const reset = el("button", "chart-reset", "Reset zoom");
  reset.type = "button";
  reset.hidden = true;
  const head = el("div", "chart-head");
  head.append(hover, reset);
  const plot = el("div", "plot");
  plot.setAttribute("role", "img");
  plot.setAttribute("aria-label", opts.title || "chart");
  const legend = el("figcaption");
  series.forEach((se, i) => legend.append(el("span", "key s" + i + (se.cls ? " " + se.cls : ""), se.label)));
  fig.append(head, plot, legend);
  const parts = { hover, reset, graph: null };
  queueMicrotask(() => whenAttached(plot, () => {
    sweep();
    parts.graph = new Dygraph(plot, rows, options(series, opts, parts));
    drawn.set(plot, parts.graph);
    fig.graph = parts.graph;
    reset.hidden = !parts.graph.isZoomed();
    fig.dataset.drawn = "true";
  }));
  reset.addEventListener("click", () => parts.graph && parts.graph.resetZoom());
  return fig;
}

// The unit to draw seconds in: seconds, minutes or hours, by the largest value.
export function timeUnit(maxSeconds) {
  if (maxSeconds >= 2 * 3600) return { div: 3600, name: "h" };
  if (maxSeconds >= 120) return { div: 60, name: "min" };
  return { div: 1, name: "s" };
}

// A horizontal bar chart: one bar per item, its label on the left and its value at its end,
// and an optional reference line across them (a dashed rule with its label on top).
// bars: [{label, value, text, cls?, describe?}] (text: the value as shown; describe: what
// the bar's <title> and aria-label say, else "label: text"); opts: {ref: {value, label},
// xLabel, div (the axis unit in the values' unit, default 1), title, width, legend:
// [{label, cls}] (keys under the chart)}. Returns a <figure class="chart bars">.
export function barChart(bars, opts = {}) {
  const narrow = window.innerWidth < 700;
  const w = opts.width || (narrow ? 380 : 640);
  const longest = Math.max(4, ...bars.map((b) => String(b.label).length));
  const left = Math.min(narrow ? 96 : 140, 14 + 6.6 * longest), right = narrow ? 74 : 96;
  const ref = opts.ref && isFinite(opts.ref.value) ? opts.ref : null;
  const rowH = 24, top = ref ? 22 : 8, bottom = 36;
  const h = top + bars.length * rowH + bottom;
  const div = opts.div || 1;
  const values = bars.map((b) => b.value).filter(isFinite).concat(ref ? [ref.value] : []);
  const hi = Math.max(0, ...values) / div || 1;
  // the axis ends on the first round tick at or beyond the largest value
  const t0 = ticks(0, hi, narrow ? 3 : 5);
  const step = t0.length > 1 ? t0[1] - t0[0] : hi;
  const end = Math.ceil(hi / step - 1e-9) * step;
  const xt = ticks(0, end, narrow ? 3 : 5);
  const sx = (v) => left + (v / div / end) * (w - left - right);
  const svg = s("svg", { viewBox: `0 0 ${w} ${h}`, role: "group", "aria-label": opts.title || "bar chart" });
  const base = h - bottom;
  const g = s("g", { class: "axes" });
  for (const v of xt) {
    const x = sx(v * div);
    g.append(s("line", { x1: x, x2: x, y1: top, y2: base, class: "grid" }));
    g.append(s("text", { x, y: base + 16, "text-anchor": "middle" }, fmt(v)));
  }
  g.append(s("line", { x1: left, x2: left, y1: top, y2: base, class: "axis" }));
  if (opts.xLabel) g.append(s("text", { x: (left + w - right) / 2, y: h - 4, "text-anchor": "middle", class: "label" }, opts.xLabel));
  svg.append(g);
  bars.forEach((b, i) => {
    const y = top + i * rowH;
    const said = b.describe || b.label + ": " + b.text;
    const bar = s("g", { class: "bar" + (b.cls ? " " + b.cls : ""), role: "img", "aria-label": said });
    bar.append(s("title", null, said));
    bar.append(s("text", { x: left - 6, y: y + rowH / 2 + 4, "text-anchor": "end", class: "name" }, b.label));
    const x1 = isFinite(b.value) ? sx(b.value) : left;
    bar.append(s("rect", { x: left, y: y + 4, width: Math.max(isFinite(b.value) ? 1 : 0, x1 - left).toFixed(1), height: rowH - 8, rx: 2 }));
    bar.append(s("text", { x: x1 + 5, y: y + rowH / 2 + 4, class: "value" }, b.text));
    svg.append(bar);
  });
  if (ref) {
    const x = sx(ref.value);
    svg.append(s("line", { x1: x, x2: x, y1: top - 4, y2: base, class: "ref" }));
    const anchor = x > w - right - 40 ? "end" : x < left + 40 ? "start" : "middle";
    svg.append(s("text", { x, y: top - 8, "text-anchor": anchor, class: "ref-label" }, ref.label));
  }
  const fig = document.createElement("figure");
  fig.className = "chart bars";
  fig.append(svg);
  if (opts.legend) {
    const legend = document.createElement("figcaption");
    for (const k of opts.legend) {
      const item = document.createElement("span");
      item.className = "key " + k.cls;
      item.textContent = k.label;
      legend.append(item);
    }
    fig.append(legend);
  }
  return fig;
}
