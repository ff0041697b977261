// The console: polls /v1/cluster every 2 s and /v1/timeline every 5 s, renders, and sends the
// two mutating calls with the operator's token. Nothing is computed here that the API can say.
import { getJson, hasToken, reloadInstance, removeMembers, setToken } from "./api.js";
import { renderChart } from "./charts.js";
import { renderInstances } from "./instances.js";
import { renderMap } from "./map.js";
import { renderTimeline } from "./timeline.js";

const $ = (id) => document.getElementById(id);
let settings = { mutations_enabled: false };
let last = null;

function status(text, state) {
  const node = $("status");
  node.textContent = text;
  node.dataset.state = state;
}

function message(text, isError) {
  const node = $("message");
  node.hidden = false;
  node.textContent = text;
  node.className = isError ? "message error" : "message";
}

function canMutate() {
  return settings.mutations_enabled && hasToken();
}

function modeLabel() {
  const mode = $("mode");
  if (!settings.mutations_enabled) mode.textContent = "read-only (no token configured)";
  else mode.textContent = hasToken() ? "remove / reload enabled" : "read-only";
  mode.classList.toggle("armed", canMutate());
}

async function onRemove(instanceId) {
  try {
    const result = await removeMembers([instanceId]);
    const lines = result.results.map((r) => `${r.group_instance_id}: ${r.removed ? "removed" : r.error}`);
    message(`member removal (${result.group_id}): ${lines.join(", ")}`, false);
  } catch (err) {
    message(`member removal failed: ${err.message}`, true);
  }
  refresh();
}

async function onReload(instanceId) {
  try {
    const result = await reloadInstance(instanceId);
    message(`reload of ${instanceId}: pid ${result.pid} is starting its successor`, false);
  } catch (err) {
    message(`reload of ${instanceId} failed: ${err.message}`, true);
  }
}

function render(cluster) {
  $("app-id").textContent = cluster.application_id;
  document.body.dataset.instances = cluster.instances.length;
  renderInstances($("instances").tBodies[0], cluster, { canMutate: canMutate(), onRemove, onReload });
  renderMap($("map"), cluster);
  renderChart($("lag-chart"), "lag", cluster.history, "lag");
  renderChart($("rate-chart"), "rate", cluster.history, "rate");
}

async function refresh() {
  try {
    last = await getJson("/v1/cluster");
    render(last);
    const down = last.instances.filter((i) => i.status !== "up").length;
    status(`updated ${new Date().toLocaleTimeString("en-GB")}${down ? ` · ${down} instance(s) down` : ""}`, "ok");
    document.body.dataset.updated = String(Date.now());
  } catch (err) {
    status(`cannot reach the REST endpoint: ${err.message}`, "error");
  }
}

async function refreshTimeline() {
  try {
    renderTimeline($("timeline"), $("timeline-source"), await getJson("/v1/timeline"));
  } catch (err) {
    $("timeline-source").textContent = `(${err.message})`;
  }
}

async function start() {
  try {
    settings = await getJson("/v1/console/settings");
  } catch (err) {
    status(`cannot reach the REST endpoint: ${err.message}`, "error");
  }
  modeLabel();
  $("token-form").addEventListener("submit", (event) => {
    event.preventDefault();
    setToken($("token").value.trim());
    $("token").value = "";
    modeLabel();
    if (last) render(last);
  });
  await refresh();
  await refreshTimeline();
  setInterval(refresh, 2000);
  setInterval(refreshTimeline, 5000);
}

start();
