// The dashboard's charts. Line charts (loss, throughput, the cluster's history) are drawn by
// dygraphs, the library Debian keeps as libjs-dygraphs: ringmasterd serves it from
// /usr/share/javascript under /vendor/ and index.html loads it (window.Dygraph). It brings
// the hover (the values of the point under the pointer), drag to zoom (across: the x range,
// up or down: the y range), double-click or the Reset button to unzoom. The What-if page's
// bar chart is dygraphs too, with a plotter of our own that draws bars (barChart below).

function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
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

// A bar chart of a few categories (the What-if page's policies), drawn by dygraphs like the
// line charts: dygraphs draws lines, so each series goes through barPlotter below, which fills
// a bar per point. The categories sit at x = 0, 1, ... (their names as the x axis's ticks);
// the series of one category stand side by side; a reference value (the measured mean) is a
// dashed rule across the plot. Nothing to zoom; hovering a category says its values.
const BAR_COLORS = ["#8ea6f0", "#c5d1f7"];
const BEST = "#4f9a68";
const IN_FORCE = "#1d2330";
const REF = "#b3261e"; // style.css --bad
const BAR_HINT = "hover a policy for its values";

// Fills one bar per point of the series e.setName, beside the bars of the series before it;
// stacked (below: the cumulative value of the series before, per category), on top of them.
// cats: the categories ({cls}: "best" fills the first series green, "in-force" outlines).
function barPlotter(cats, below) {
  return (e) => {
    const ctx = e.drawingContext, g = e.dygraph;
    const step = e.points.length > 1 ? Math.abs(e.points[1].canvasx - e.points[0].canvasx)
      : e.plotArea.w / 2;
    const group = Math.min(step * 0.7, 120), w = below ? group : group / e.seriesCount;
    for (const p of e.points) {
      if (!Number.isFinite(p.yval)) continue;
      const c = cats[Math.round(p.xval)] || {};
      const base = g.toDomYCoord(below ? below[e.seriesIndex][Math.round(p.xval)] : 0);
      const x = p.canvasx - group / 2 + (below ? 0 : e.seriesIndex * w);
      ctx.fillStyle = e.seriesIndex === 0 && /\bbest\b/.test(c.cls || "") ? BEST : e.color;
      ctx.fillRect(x, p.canvasy, w - 1, base - p.canvasy);
      if (/\bin-force\b/.test(c.cls || "")) {
        ctx.strokeStyle = IN_FORCE;
        ctx.lineWidth = 1.5;
        ctx.strokeRect(x, p.canvasy, w - 1, base - p.canvasy);
      }
    }
  };
}

// The dashed rule of the reference value, under the bars.
function refRule(ref) {
  return (ctx, area, g) => {
    const y = g.toDomYCoord(ref.value);
    ctx.save();
    ctx.strokeStyle = REF;
    ctx.lineWidth = 1.5;
    ctx.setLineDash([5, 3]);
    ctx.beginPath();
    ctx.moveTo(area.x, y);
    ctx.lineTo(area.x + area.w, y);
    ctx.stroke();
    ctx.fillStyle = REF;
    ctx.font = "11px sans-serif";
    ctx.textAlign = "right";
    ctx.fillText(ref.label, area.x + area.w - 4, y - 4);
    ctx.restore();
  };
}

const escapeHtml = (t) => String(t).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");

// The x axis's labels (dygraphs writes them as HTML) for categories in slots of slot px:
// each name in its slot; where the longest does not fit, every other one a line lower;
// where it does not fit even so, the names cut (the hover line says them whole).
export function barLabels(cats, slot) {
  const longest = Math.max(...cats.map((c) => String(c.label).length));
  const stagger = longest * 6.5 + 8 > slot;
  const room = Math.max(3, Math.floor((stagger ? 2 * slot : slot) / 6.5) - 1);
  return {
    stagger,
    labels: cats.map((c, i) => {
      const name = String(c.label).length > room ? String(c.label).slice(0, room - 1) + "…" : String(c.label);
      return (stagger && i % 2 ? "<br>" : "") + escapeHtml(name);
    }),
  };
}

function barOptions(cats, series, opts, hover, width) {
  const div = opts.div || 1;
  const slot = Math.min(160, Math.max(20, (width - 60) / cats.length));
  const x = barLabels(cats, slot);
  return {
    ...(x.stagger ? { xAxisHeight: 34 } : {}),
    labels: ["x", ...series.map((se) => se.label)],
    colors: series.map((se, i) => se.color || BAR_COLORS[i % BAR_COLORS.length]),
    plotter: barPlotter(cats, opts.below),
    includeZero: true,
    valueRange: opts.yMax > 0 ? [0, (opts.yMax / div) * 1.08] : null,
    dateWindow: [-0.6, cats.length - 0.4],
    interactionModel: Dygraph.nonInteractiveModel,
    highlightCircleSize: 0,
    ylabel: opts.yLabel || "",
    axisLabelFontSize: 11,
    gridLineColor: "#eceef2",
    axisLineColor: GREY,
    underlayCallback: opts.ref ? refRule({ value: opts.ref.value / div, label: opts.ref.label }) : null,
    axes: {
      x: { drawGrid: false, axisLabelWidth: Math.floor(x.stagger ? 2 * slot : slot),
        ticker: () => cats.map((c, i) => ({ v: i, label: x.labels[i] })) },
      y: { axisLabelFormatter: (v) => fmt(v), valueFormatter: (v) => fmt(v), axisLabelWidth: 44 },
    },
    highlightCallback: (e, x) => {
      const c = cats[Math.round(x)];
      hover.textContent = c ? c.describe || c.label : opts.hint || BAR_HINT;
    },
    unhighlightCallback: () => { hover.textContent = opts.hint || BAR_HINT; },
  };
}

// cats: [{label, cls? ("in-force": outlined, "best": its first bar green), describe (what
// hovering it says)}]; series: [{label, values (one per category, in the values' unit), color?}];
// opts: {ref: {value, label} (a dashed rule), div (the axis unit in the values' unit, default
// 1), yLabel, yMax (the largest value to show, in the values' unit), stacked (the series of a
// category on top of each other, not side by side), hint (what the hover line says before
// one hovers), title, legend: [{label,
// cls}] (keys under the chart)}. Returns a <figure class="chart bars"> whose graph property is
// the Dygraph once it is drawn (once the figure is in the document).
export function barChart(cats, series, opts = {}) {
  const fig = el("figure", "chart bars");
  if (!Dygraph || cats.length === 0) {
    fig.append(el("p", "state-msg error", !Dygraph
      ? "The chart library is missing: install Debian's libjs-dygraphs (ringmasterd serves it from /usr/share/javascript)."
      : "Nothing to draw."));
    return fig;
  }
  const div = opts.div || 1;
  const value = (se, i) => (Number.isFinite(se.values[i]) ? se.values[i] / div : null);
  let rows = cats.map((c, i) => [i, ...series.map((se) => value(se, i))]);
  if (opts.stacked) {
    // each series drawn from the sum of those before it (opts.below) to that plus its own
    const below = series.map(() => cats.map(() => 0));
    rows = cats.map((c, i) => {
      let sum = 0;
      return [i, ...series.map((se, k) => { below[k][i] = sum; sum += value(se, i) || 0; return sum; })];
    });
    opts = { ...opts, below, yMax: opts.yMax || Math.max(0, ...rows.map((r) => r[r.length - 1])) * div };
  }
  const hover = el("div", "chart-hover muted small", opts.hint || BAR_HINT);
  const head = el("div", "chart-head");
  head.append(hover);
  const plot = el("div", "plot");
  plot.setAttribute("role", "img");
  plot.setAttribute("aria-label", (opts.title || "bar chart") + ": " + cats.map((c) => c.describe || c.label).join("; "));
  const legend = el("figcaption");
  for (const k of opts.legend || []) legend.append(el("span", "key " + k.cls, k.label));
  fig.append(head, plot, legend);
  queueMicrotask(() => whenAttached(plot, () => {
    sweep();
    const g = new Dygraph(plot, rows, barOptions(cats, series, opts, hover, plot.clientWidth));
    drawn.set(plot, g);
    fig.graph = g;
    fig.dataset.drawn = "true";
  }));
  return fig;
}
