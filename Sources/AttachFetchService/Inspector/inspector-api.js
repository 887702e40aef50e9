/* The inspector talking to the service: the token, its POST requests, whether it publishes. */
import { TOKEN_KEY } from './inspector-constants.js';
import { state } from './inspector-state.js';
import { isObj, str } from './inspector-format.js';

// ---------------------------------------------------------------------------------------
// Talking to the service

function getToken() {
  try {
    return sessionStorage.getItem(TOKEN_KEY) || '';
  } catch (error) {
    return '';
  }
}
export function setToken(value) {
  try {
    if (value) sessionStorage.setItem(TOKEN_KEY, value);
    else sessionStorage.removeItem(TOKEN_KEY);
  } catch (error) { /* storage refused: the token lives for this request only */ }
}
export function authHeaders(headers) {
  const token = getToken();
  if (token) headers.Authorization = 'Bearer ' + token;
  return headers;
}

export async function post(path, body, signal) {
  const headers = authHeaders({ 'Content-Type': 'application/json' });
  const sentToken = Boolean(headers.Authorization);
  const response = await fetch(path, { method: 'POST', headers, body, credentials: 'omit', cache: 'no-store', signal });
  const text = await response.text();
  let json = null;
  try {
    json = JSON.parse(text);
  } catch (error) { /* not JSON: reported below */ }
  // The service's span, when it exports traces: `00-<trace id>-<span id>-<flags>`.
  const traceparent = /^[0-9a-f]{2}-([0-9a-f]{32})-[0-9a-f]{16}-[0-9a-f]{2}$/.exec(response.headers.get('traceparent') || '');
  return { status: response.status, ok: response.ok, json, text, sentToken, traceId: traceparent ? traceparent[1] : '' };
}

export function errorOf(answer) {
  const error = answer.json && isObj(answer.json.error) ? answer.json.error : {};
  return { code: str(error.code), message: str(error.message) };
}

/**
 * Whether the service publishes, read from this page's own Content-Security-Policy: its
 * img-src names the public base when there is one. Asking first spares a refused
 * ?rewrite=true request (and its console line) on a service that does not publish.
 */
export async function servicePublishes(signal) {
  if (state.publishes !== null) return state.publishes;
  try {
    const response = await fetch(location.pathname || '/', { method: 'HEAD', credentials: 'omit', cache: 'no-store', signal });
    const policy = response.headers.get('Content-Security-Policy');
    if (!response.ok || !policy) return null;
    const directive = policy.split(';').map((part) => part.trim()).find((part) => /^img-src\s/i.test(part));
    if (!directive) return null;
    const sources = directive.split(/\s+/).slice(1).filter((source) => ["'self'", 'data:', 'blob:'].indexOf(source.toLowerCase()) < 0);
    state.publishes = sources.length > 0;
    return state.publishes;
  } catch (error) {
    if (error && error.name === 'AbortError') throw error;
    return null;
  }
}
