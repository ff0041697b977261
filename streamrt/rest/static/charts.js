// Lag and throughput per task over the last minutes, with the vendored uPlot (a global).
const charts = {};

function palette(i) {
  return `hsl(${(i * 47) % 360} 65% 45%)`;
}

function build(node, key, history, metric) {
  const series = history.series;
  const opts = {
    width: Math.max(node.clientWidth, 300),
    height: 200,
    scales: { x: { time: true } },
    legend: { show: series.length <= 24, live: false },
    series: [{}, ...series.map((s, i) => ({ label: s.label, stroke: palette(i), width: 1.5, spanGaps: false }))],
    axes: [{}, { size: 60 }],
  };
  const data = [history.t, ...series.map((s) => s[metric])];
  if (charts[key]) charts[key].destroy();
  charts[key] = new uPlot(opts, data, node);
  charts[key].labels = series.map((s) => s.label).join("|");
}

export function renderChart(node, key, history, metric) {
  if (typeof uPlot === "undefined") {
    node.textContent = "chart library missing";
    return;
  }
  const labels = history.series.map((s) => s.label).join("|");
  const chart = charts[key];
  if (chart && chart.labels === labels) {
    chart.setData([history.t, ...history.series.map((s) => s[metric])]);
  } else {
    build(node, key, history, metric);
  }
}
