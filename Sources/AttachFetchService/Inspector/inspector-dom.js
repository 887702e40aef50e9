/* The inspector's DOM helpers: elements built from data, never from markup. */
import { isHttpURL } from './inspector-format.js';

/** Builds an element: props are attributes (class, text, hidden, for and plain attributes). */
export function el(tag, props, ...children) {
  const node = document.createElement(tag);
  if (props) {
    for (const [key, value] of Object.entries(props)) {
      if (value === undefined || value === null || value === false) continue;
      if (key === 'class') node.className = value;
      else if (key === 'text') node.textContent = String(value);
      else if (key === 'hidden') node.hidden = true;
      else if (key === 'for') node.htmlFor = value;
      else if (/^on/i.test(key) || key === 'style') throw new Error('not allowed: ' + key);
      else node.setAttribute(key, value === true ? '' : String(value));
    }
  }
  return add(node, children);
}
function add(node, children) {
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false || child === '') continue;
    node.appendChild(typeof child === 'string' || typeof child === 'number'
      ? document.createTextNode(String(child)) : child);
  }
  return node;
}
export function code(text, className) { return el('code', { class: className }, String(text)); }
export function clear(node) { while (node.firstChild) node.removeChild(node.firstChild); }

export function link(href, text) {
  // Only http(s) addresses become links; anything else stays text.
  if (!isHttpURL(href)) return el('span', { class: 'url-text' }, text || href);
  return el('a', { class: 'url-text', href, rel: 'noopener noreferrer nofollow', target: '_blank' }, text || href);
}
