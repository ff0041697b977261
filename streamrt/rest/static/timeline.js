// The timeline of rebalances, restarts and member removals (from the events topic).
import { clock, el, fmt, replace } from "./dom.js";

function gap(entry) {
  return entry.gap ? `, longest processing gap ${entry.gap.seconds.toFixed(1)} s (${entry.gap.partition})` : "";
}

function describe(e) {
  if (e.type === "rebalance") {
    const moved = e.moved.length ? `${e.moved.length} partition(s) moved` : "nothing moved";
    const who = [
      e.joined.length ? `joined: ${e.joined.join(", ")}` : "",
      e.left.length ? `left: ${e.left.join(", ")}` : "",
    ].filter(Boolean).join("; ");
    return [`rebalance → generation ${e.generation}`, `${e.members.length} members; ${moved}${who ? "; " + who : ""}${gap(e)}`];
  }
  if (e.type === "restart") {
    const how = e.handoff ? "hand-off" : "restart";
    const ready = e.ready_s === null ? "not running yet" : `running after ${e.ready_s.toFixed(1)} s`;
    return [`${how} of ${e.instance_id}`, `pid ${e.old_pid} → ${e.new_pid}; ${ready}; ${fmt(e.restored_records)} records restored${gap(e)}`];
  }
  if (e.type === "member_removed") {
    return [`member removed: ${e.fields.member}`, e.fields.error ? `error ${e.fields.error}` : "by its instance"];
  }
  return [`${e.type.replace("_", " ")}: ${e.thread_id || e.instance_id}`, e.fields.error || ""];
}

// what the instance skipped (oversized, malformed, unsigned events) and whether it could check
// who wrote the events at all (docs/operations.md, "What the REST endpoint trusts")
function provenance(timeline) {
  const skipped = Object.entries(timeline.skipped || {}).filter(([, n]) => n)
    .map(([kind, n]) => `${fmt(n)} ${kind}`);
  const parts = skipped.length ? [`skipped ${skipped.join(", ")}`] : [];
  if (timeline.verification === "none") parts.push("unsigned: anyone who can write the topic could have written them");
  return parts.length ? `; ${parts.join("; ")}` : "";
}

export function renderTimeline(list, source, timeline) {
  source.textContent = timeline.error
    ? `(${timeline.error})`
    : `(${timeline.topic}, ${fmt(timeline.events_read)} events read${provenance(timeline)})`;
  if (!timeline.entries.length) {
    replace(list, el("li", {}, "no rebalance or restart yet"));
    return;
  }
  replace(list, timeline.entries.map((e) => {
    const [what, detail] = describe(e);
    const moved = e.type === "rebalance" && e.moved.length
      ? el("div", { class: "detail" }, e.moved.slice(0, 12).map((m) => `${m.partition}: ${m.from} → ${m.to}`).join(" · "))
      : null;
    return el("li", { class: e.type, "data-type": e.type, "data-trusted": String(e.trusted) },
      el("time", {}, clock(e.ts)), e.trusted === false ? `${what} (unverified)` : what,
      el("div", { class: "detail" }, detail), moved);
  }));
}
