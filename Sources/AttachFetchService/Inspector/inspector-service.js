/* The inspector in service mode: the form, the token form, deep links and running an inspection. */
import { ui, say, state } from './inspector-state.js';
import { sentence, isObj } from './inspector-format.js';
import { clear } from './inspector-dom.js';
import { renderResult } from './inspector-result.js';
import { post, servicePublishes, errorOf, setToken } from './inspector-api.js';

function showTokenForm(refused) {
  ui.tokenForm.hidden = false;
  ui.tokenInput.value = '';
  say(refused
    ? 'The access token was refused (401 unauthorized): the request was not run. Enter a valid token below.'
    : 'This service needs an access token (401 unauthorized): the request was not run. Enter the token below; the inspection then runs again.', 'error');
  ui.tokenInput.focus();
}

function deepLink(input) {
  const parameters = new URLSearchParams();
  if (input.kind === 'url') parameters.set('url', input.url);
  else parameters.set('payload', input.text);
  return location.pathname + '?' + parameters.toString();
}

async function inspect(input, how) {
  if (state.controller) state.controller.abort();
  const controller = new AbortController();
  state.controller = controller;
  state.last = input;
  state.runId += 1;
  const run = state.runId;
  state.fileCache = new Map();
  ui.results.setAttribute('aria-busy', 'true');
  say(input.kind === 'url'
    ? 'Inspecting the URL… at most the batch deadline (25 s unless the service is set otherwise).'
    : 'Inspecting the payload… at most the batch deadline (25 s unless the service is set otherwise).', 'busy');
  try {
    let answer;
    let rewriteUnavailable = false;
    if (input.kind === 'url') {
      answer = await post('/v1/attachments', JSON.stringify({ requests: [{ url: input.url }] }), controller.signal);
    } else {
      const publishes = await servicePublishes(controller.signal);
      if (publishes !== false) {
        answer = await post('/v1/payloads?rewrite=true', input.text, controller.signal);
        const error = errorOf(answer);
        if (answer.status === 400 && error.code === 'invalidRequest' && error.message.indexOf('rewrite=true needs the service to publish') >= 0) {
          state.publishes = false;
          rewriteUnavailable = true;
          answer = await post('/v1/payloads', input.text, controller.signal);
        }
      } else {
        rewriteUnavailable = true;
        answer = await post('/v1/payloads', input.text, controller.signal);
      }
    }
    if (run !== state.runId) return;
    if (answer.status === 401) {
      if (answer.sentToken) setToken('');
      clear(ui.results);
      showTokenForm(answer.sentToken);
      return;
    }
    if (!answer.ok) {
      const error = errorOf(answer);
      clear(ui.results);
      if (error.code || error.message) {
        const hints = {
          invalidRequest: ' Check what you pasted.', bodyTooLarge: ' The payload is larger than the service takes.',
          overloaded: ' The service is busy: try again in a moment.', requestTimeout: ' Try again.',
        };
        say('The service refused the request (HTTP ' + answer.status + ', ' + (error.code || 'error') + '): ' +
          sentence(error.message || 'no message') + (hints[error.code] || ''), 'error');
      } else {
        say('The service answered HTTP ' + answer.status + ' with something that is not its JSON error: is a proxy in the way?', 'error');
      }
      return;
    }
    if (!isObj(answer.json) || !Array.isArray(answer.json.attachments)) {
      clear(ui.results);
      say('The service\'s answer is not a result this page understands.', 'error');
      return;
    }
    ui.tokenForm.hidden = true;
    if (!state.report) {
      try {
        history.replaceState(null, '', deepLink(input));
      } catch (error) { /* the address stays as it was */ }
    }
    const summary = renderResult(input.kind === 'url' ? 'attachments' : 'payload', answer.json,
      input.kind === 'payload' ? input.payload : null, answer.text, { copyLink: true, rewriteUnavailable });
    say('Done. ' + summary + (answer.traceId ? ' Trace id ' + answer.traceId + '.' : ''), 'done');
    if (how && how.fromUser) {
      const heading = document.getElementById('results-heading');
      if (heading) heading.focus();
    }
  } catch (error) {
    if (error && error.name === 'AbortError') return;
    if (run !== state.runId) return;
    clear(ui.results);
    say('The service could not be reached: ' + (error && error.message ? error.message : 'no answer') + '. Is attach-fetch serve still running?', 'error');
  } finally {
    if (run === state.runId) {
      ui.results.removeAttribute('aria-busy');
      state.controller = null;
    }
  }
}

/** The inspection the form asks for, or null (with a message) when there is none. */
function readForm() {
  const url = ui.url.value.trim();
  const text = ui.payload.value.trim();
  let chosen = url || text;
  if (url && text) chosen = state.lastEdited === 'url' ? url : text;
  if (!chosen) {
    say('Paste a media URL or a push payload first.', 'error');
    ui.url.focus();
    return null;
  }
  if (chosen.charAt(0) === '{') return payloadInput(chosen);
  return { kind: 'url', url: chosen };
}

function payloadInput(text) {
  let payload;
  try {
    payload = JSON.parse(text);
  } catch (error) {
    say('The payload is not valid JSON: ' + (error && error.message ? error.message : 'it cannot be read') + '.', 'error');
    return null;
  }
  if (!isObj(payload)) {
    say('The payload must be a JSON object ({…}).', 'error');
    return null;
  }
  return { kind: 'payload', text, payload };
}

export function startService() {
  const parameters = new URLSearchParams(location.search);
  ui.url.addEventListener('input', () => { state.lastEdited = 'url'; });
  ui.payload.addEventListener('input', () => { state.lastEdited = 'payload'; });
  ui.form.addEventListener('submit', (event) => {
    event.preventDefault();
    const input = readForm();
    if (input) inspect(input, { fromUser: true });
  });
  ui.tokenForm.addEventListener('submit', (event) => {
    event.preventDefault();
    const token = ui.tokenInput.value.trim();
    if (!token) {
      say('Enter the access token first.', 'error');
      ui.tokenInput.focus();
      return;
    }
    if (!/^[\x21-\x7e]+$/.test(token)) {
      say('A token is printable ASCII without spaces: check what you pasted.', 'error');
      ui.tokenInput.focus();
      return;
    }
    setToken(token);
    ui.tokenInput.value = '';
    if (state.last) {
      inspect(state.last, { fromUser: true });
    } else {
      ui.tokenForm.hidden = true;
      say('Token saved for this tab.', 'done');
    }
  });
  const url = parameters.get('url');
  const payload = parameters.get('payload');
  if (payload) {
    ui.payload.value = payload;
    state.lastEdited = 'payload';
    const input = payloadInput(payload.trim());
    if (input) inspect(input, { fromUser: false });
  } else if (url) {
    ui.url.value = url;
    state.lastEdited = 'url';
    inspect({ kind: 'url', url: url.trim() }, { fromUser: false });
  }
}
