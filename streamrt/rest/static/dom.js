// Tiny DOM helpers: elements are built with textContent only (no HTML strings), so nothing
// the API returns can inject markup.
export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "class") node.className = value;
    else if (key.startsWith("data-")) node.setAttribute(key, value);
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else node[key] = value;
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

export function replace(node, ...children) {
  node.replaceChildren(...children.flat().filter((c) => c !== null && c !== undefined));
}

export function fmt(n) {
  return n === null || n === undefined ? "–" : Number(n).toLocaleString("en-US");
}

export function clock(ts) {
  return new Date(ts * 1000).toLocaleTimeString("en-GB", { hour12: false });
}
