// The instances table, with the member-removal and reload buttons (two clicks: arm, then act).
import { el, replace } from "./dom.js";

function threadChips(instance) {
  return (instance.threads || []).map((t) =>
    el("span", { class: "thread", "data-thread": t.thread_name }, t.thread_name, " ",
      el("span", { class: "state" }, t.state)));
}

// Armed buttons survive the table's re-render (every 2 s): key -> until when (ms).
const armed = new Map();

function armedButton(key, label, confirmLabel, enabled, action) {
  const isArmed = () => (armed.get(key) || 0) > Date.now();
  const button = el("button", { type: "button", disabled: !enabled, "data-key": key },
    isArmed() ? confirmLabel : label);
  button.classList.toggle("armed", isArmed());
  button.addEventListener("click", () => {
    if (!isArmed()) {
      armed.set(key, Date.now() + 5000);
      button.classList.add("armed");
      button.textContent = confirmLabel;
      return;
    }
    armed.delete(key);
    button.classList.remove("armed");
    button.textContent = label;
    action();
  });
  return button;
}

export function renderInstances(tbody, cluster, { canMutate, onRemove, onReload }) {
  const title = canMutate ? undefined : "read-only: enter the token to enable";
  replace(tbody, cluster.instances.map((i) =>
    el("tr", { "data-instance": i.instance_id, "data-status": i.status },
      el("td", {}, i.instance_id, i.instance_id === cluster.local_instance_id ? " (this page)" : ""),
      el("td", {}, el("span", { class: `badge ${i.status}`, title: i.error || i.reason || "" }, i.status)),
      el("td", {}, i.state || "–"),
      el("td", {}, i.application_server || "–"),
      el("td", {}, threadChips(i)),
      el("td", { title },
        el("span", { "data-action": "remove" },
          armedButton(`remove:${i.instance_id}`, "Remove from group", `Remove ${i.instance_id}?`, canMutate,
            () => onRemove(i.instance_id))),
        el("span", { "data-action": "reload" },
          armedButton(`reload:${i.instance_id}`, "Reload", `Reload ${i.instance_id}?`, canMutate && i.status === "up",
            () => onReload(i.instance_id)))),
    )));
}
