// A small SVG line chart (no library): axes with round ticks, one polyline per series,
// optional dots, a legend. It scales with its container through the viewBox.

const NS = "http://www.w3.org/2000/svg";
const PAD = { left: 56, right: 14, top: 24, bottom: 38 };

function s(tag, attrs, text) {
  const el = document.createElementNS(NS, tag);
  for (const [k, v] of Object.entries(attrs || {})) el.setAttribute(k, String(v));
  if (text !== undefined) el.textContent = text;
  return el;
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

function extent(series, axis) {
  let lo = Infinity, hi = -Infinity;
  for (const se of series)
    for (const p of se.points) {
      if (!isFinite(p[axis])) continue;
      lo = Math.min(lo, p[axis]);
      hi = Math.max(hi, p[axis]);
    }
  if (lo === Infinity) return [0, 1];
  if (lo === hi) return [lo - (lo === 0 ? 0 : Math.abs(lo) * 0.1) , hi + (hi === 0 ? 1 : Math.abs(hi) * 0.1)];
  return [lo, hi];
}

function fmt(v) {
  const a = Math.abs(v);
  if (a !== 0 && (a >= 1e5 || a < 1e-3)) return v.toExponential(1);
  return String(Number(v.toPrecision(4)));
}

function axes(svg, sx, sy, xt, yt, w, h, opts) {
  const g = s("g", { class: "axes" });
  for (const v of yt) {
    const y = sy(v);
    g.append(s("line", { x1: PAD.left, x2: w - PAD.right, y1: y, y2: y, class: "grid" }));
    g.append(s("text", { x: PAD.left - 6, y: y + 4, "text-anchor": "end" }, fmt(v)));
  }
  for (const v of xt) {
    const x = sx(v);
    g.append(s("line", { x1: x, x2: x, y1: h - PAD.bottom, y2: h - PAD.bottom + 4, class: "tick" }));
    g.append(s("text", { x, y: h - PAD.bottom + 16, "text-anchor": "middle" },
      opts.xFormat ? opts.xFormat(v) : fmt(v)));
  }
  g.append(s("line", { x1: PAD.left, x2: w - PAD.right, y1: h - PAD.bottom, y2: h - PAD.bottom, class: "axis" }));
  if (opts.xLabel) g.append(s("text", { x: (PAD.left + w - PAD.right) / 2, y: h - 4, "text-anchor": "middle", class: "label" }, opts.xLabel));
  if (opts.yLabel) g.append(s("text", { x: 4, y: 12, class: "label" }, opts.yLabel));
  svg.append(g);
}

// series: [{label, points: [[x, y], ...], cls?, dots?, step?}]; opts: {width, height,
// xLabel, yLabel, xFormat, yMin}. Returns a <figure class="chart">.
export function lineChart(series, opts = {}) {
  // Drawn narrower on a phone so that its text keeps a readable size once scaled.
  const narrow = window.innerWidth < 700;
  const w = opts.width || (narrow ? 380 : 640), h = opts.height || (narrow ? 220 : 240);
  const [x0, x1] = extent(series, 0);
  let [y0, y1] = extent(series, 1);
  if (opts.yMin !== undefined) y0 = Math.min(y0, opts.yMin);
  const xt = ticks(x0, x1, Math.max(2, Math.floor(w / 110))), yt = ticks(y0, y1, 4);
  const sx = (v) => PAD.left + ((v - x0) / (x1 - x0 || 1)) * (w - PAD.left - PAD.right);
  const sy = (v) => h - PAD.bottom - ((v - y0) / (y1 - y0 || 1)) * (h - PAD.top - PAD.bottom);
  const svg = s("svg", { viewBox: `0 0 ${w} ${h}`, role: "img", "aria-label": opts.title || "chart" });
  axes(svg, sx, sy, xt, yt, w, h, opts);
  series.forEach((se, i) => {
    const cls = "series s" + i + (se.cls ? " " + se.cls : "");
    const pts = se.points.filter((p) => isFinite(p[0]) && isFinite(p[1]));
    let d = "";
    pts.forEach((p, k) => {
      const x = sx(p[0]).toFixed(1), y = sy(p[1]).toFixed(1);
      if (se.step && k > 0) d += ` H${x} V${y}`;
      else d += (k ? " L" : "M") + x + " " + y;
    });
    if (d) svg.append(s("path", { d, class: cls }));
    if (se.dots) for (const p of pts) svg.append(s("circle", { cx: sx(p[0]), cy: sy(p[1]), r: 2.5, class: cls + " dot" }));
  });
  const fig = document.createElement("figure");
  fig.className = "chart";
  fig.append(svg);
  const legend = document.createElement("figcaption");
  series.forEach((se, i) => {
    const item = document.createElement("span");
    item.className = "key s" + i + (se.cls ? " " + se.cls : "");
    item.textContent = se.label;
    legend.append(item);
  });
  fig.append(legend);
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
