// Talking to the REST endpoint that served this page. The token lives only in this module's
// memory: typed by the operator, sent as a bearer header on the mutating calls, never stored.
let token = null;

export function setToken(value) {
  token = value ? value : null;
}

export function hasToken() {
  return token !== null;
}

async function call(method, path, body) {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), 8000);
  const headers = { Accept: "application/json" };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  if (method !== "GET" && token) headers.Authorization = `Bearer ${token}`;
  try {
    const response = await fetch(path, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: controller.signal,
      cache: "no-store",
    });
    const data = await response.json().catch(() => ({}));
    if (!response.ok) {
      const reason = data.message || data.detail || response.statusText;
      throw new Error(`HTTP ${response.status}: ${typeof reason === "string" ? reason : JSON.stringify(reason)}`);
    }
    return data;
  } finally {
    clearTimeout(timer);
  }
}

export const getJson = (path) => call("GET", path);
export const removeMembers = (ids) => call("POST", "/v1/members:remove", { instance_ids: ids });
export const reloadInstance = (id) =>
  call("POST", `/v1/reload?instance_id=${encodeURIComponent(id)}`);
