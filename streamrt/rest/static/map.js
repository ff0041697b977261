// The partition x thread map: one row per partition, one column per stream thread.
import { el, fmt, replace } from "./dom.js";

function lagClass(lag) {
  if (lag === null || lag === undefined) return "lag-unknown";
  if (lag >= 10000) return "lag-3";
  if (lag >= 1000) return "lag-2";
  if (lag >= 100) return "lag-1";
  return "lag-0";
}

function chip(task, partition, thread) {
  const common = {
    "data-task": task.task,
    "data-role": task.role,
    "data-partition": partition,
    "data-thread": thread,
  };
  if (task.role === "restoring") {
    const total = Math.max(task.to_restore || 0, task.restored || 0, 1);
    const pct = Math.round((100 * (task.restored || 0)) / total);
    return el(
      "span",
      { ...common, class: "chip restoring", "data-progress": pct,
        title: `restoring: ${fmt(task.restored)} of ~${fmt(task.to_restore)} records` },
      `${task.task} `,
      el("progress", { max: total, value: task.restored || 0 }),
      ` ${pct}%`,
    );
  }
  if (task.role === "standby") {
    return el("span", { ...common, class: "chip standby", title: "standby: changelog records behind" },
      `${task.task} · ${fmt(task.lag)}`);
  }
  if (task.role === "unknown") {
    return el("span", { ...common, class: "chip unknown", title: "assigned to an instance that does not answer" },
      `${task.task} ?`);
  }
  return el("span", { ...common, class: `chip active ${lagClass(task.lag)}`, title: "active: input records behind" },
    `${task.task} · ${fmt(task.lag)}`);
}

export function renderMap(table, cluster) {
  const columns = cluster.columns;
  const groups = [];
  for (const c of columns) {
    const last = groups[groups.length - 1];
    if (last && last.instance === c.instance_id) last.span += 1;
    else groups.push({ instance: c.instance_id, span: 1, status: c.status });
  }
  const head = el("thead", {},
    el("tr", {}, el("th", { rowSpan: 2 }, "partition"),
      groups.map((g) => el("th", { colSpan: g.span, class: `instance ${g.status}` },
        g.status === "down" ? `${g.instance} (down)` : g.instance))),
    el("tr", {}, columns.map((c) => el("th", { class: c.status }, c.thread))),
  );
  const body = el("tbody", {}, cluster.rows.map((row) =>
    el("tr", { "data-partition": row.partition },
      el("th", {}, String(row.partition)),
      columns.map((c) => el("td", { class: c.status, "data-thread": c.thread },
        (row.cells[c.thread] || []).map((t) => chip(t, row.partition, c.thread)))))));
  replace(table, head, body);
}
