/* A whole result in the inspector: summary, contents, lint, the cards, the rewritten payload. */
import { STATUS_MARK } from './inspector-constants.js';
import { ui } from './inspector-state.js';
import { str, plural, int, isNum, ms, baseName, isObj } from './inspector-format.js';
import { el, clear, code } from './inspector-dom.js';
import { groupDescriptors, notificationTexts, androidChecked, payloadText } from './inspector-payload.js';
import { timingSegments, chooseScale } from './inspector-waterfall.js';
import { card } from './inspector-card.js';
import { lintSection } from './inspector-lint.js';

function copyButton(id, label, getText, selectTarget) {
  const feedback = el('span', { class: 'copy-status', role: 'status' });
  const button = el('button', { id, type: 'button', class: 'secondary' }, label);
  button.addEventListener('click', async () => {
    const text = getText();
    feedback.textContent = '';
    try {
      if (!navigator.clipboard || !window.isSecureContext) throw new Error('no clipboard');
      await navigator.clipboard.writeText(text);
      feedback.textContent = 'Copied.';
    } catch (error) {
      const target = selectTarget();
      if (target) {
        const range = document.createRange();
        range.selectNodeContents(target);
        const selection = window.getSelection();
        selection.removeAllRanges();
        selection.addRange(range);
      }
      feedback.textContent = 'This browser does not let the page copy here: ' +
        (target ? 'the text is selected, press Ctrl+C (⌘C on a Mac).' : 'select it and press Ctrl+C (⌘C on a Mac).');
    }
  });
  return [button, feedback];
}

function rewrittenSection(text) {
  const pre = el('pre', { id: 'rewritten', class: 'json', tabindex: '0', 'aria-label': 'The rewritten payload (JSON)' }, text);
  return el('section', { class: 'rewritten-section', 'aria-labelledby': 'rewritten-heading' },
    el('h2', { id: 'rewritten-heading' }, 'Rewritten payload'),
    el('p', null, 'Every media URL replaced by the published file that its key\'s platforms can show (the Android variant where Android reads the key); media that is not ready removed. Send this one.'),
    el('p', { class: 'copy-line' }, copyButton('copy-rewritten', 'Copy', () => text, () => pre)),
    pre);
}

function summaryText(groups, result) {
  const counts = {};
  for (const group of groups) {
    const status = str(group.descriptor.status) || 'unknown';
    counts[status] = (counts[status] || 0) + 1;
  }
  const ready = counts.ready || 0;
  const notReady = groups.length - ready;
  const keys = groups.reduce((sum, group) => sum + group.members.length, 0);
  let text = plural(groups.length, 'attachment') + (keys > groups.length ? ' (from ' + plural(keys, 'media key') + ')' : '') + ': ' + int(ready) + ' ready';
  if (notReady) {
    const parts = Object.keys(counts).filter((status) => status !== 'ready').map((status) => int(counts[status]) + ' ' + status);
    text += ', ' + int(notReady) + ' not (' + parts.join(', ') + ')';
  }
  text += '.';
  if (isNum(result.elapsedMs)) text += ' The batch took ' + ms(result.elapsedMs) + (isNum(result.deadlineMs) ? ' of its ' + ms(result.deadlineMs) + ' deadline' : '') + '.';
  return text;
}

/**
 * Renders a result: `kind` is "attachments" or "payload"; `rawDocument` is the answer's text
 * (for the rewritten payload with its numbers as sent); `payload` the pasted payload object.
 */
export function renderResult(kind, result, payload, rawDocument, options) {
  const results = ui.results;
  clear(results);
  const descriptors = Array.isArray(result.attachments) ? result.attachments : [];
  const groups = groupDescriptors(descriptors);
  const deadline = isNum(result.deadlineMs) ? result.deadlineMs : null;
  const maxEnd = groups.reduce((max, group) => Math.max(max, timingSegments(group.descriptor.timings).end), 0);
  const context = {
    deadlineMs: deadline,
    scale: chooseScale(maxEnd, deadline),
    texts: kind === 'payload' ? notificationTexts(payload) : { ios: {}, android: {} },
    androidChecked: androidChecked(result, kind),
  };

  const head = el('section', { class: 'summary-section', 'aria-labelledby': 'results-heading' },
    el('h2', { id: 'results-heading', tabindex: '-1' }, kind === 'payload' ? 'Results for the payload' : 'Results'));
  const summary = el('p', { class: 'summary' }, summaryText(groups, result));
  head.appendChild(summary);
  if (options && options.copyLink) {
    head.appendChild(el('p', { class: 'copy-line' }, copyButton('copy-link', 'Copy link', () => location.href, () => null),
      el('span', { class: 'hint' }, ' A link that runs this inspection again.')));
  }
  if (groups.length > 1) {
    const toc = el('ol', { class: 'toc' });
    groups.forEach((group, position) => {
      const descriptor = group.descriptor;
      const word = str(descriptor.status);
      toc.appendChild(el('li', { class: 'toc-' + word },
        el('a', { href: '#card-' + position }, baseName(descriptor.url) || descriptor.identifier || 'attachment ' + (position + 1)),
        ' — ', el('span', { class: 'toc-status' }, (STATUS_MARK[word] || '') + ' ' + word),
        descriptor.reason && descriptor.reason.code ? el('span', null, ' (', code(descriptor.reason.code), ')') : null));
    });
    head.appendChild(el('nav', { class: 'toc-nav', 'aria-label': 'Attachments in this result' }, toc));
  }
  results.appendChild(head);

  if (kind === 'payload') results.appendChild(lintSection(result.lint, groups));

  const list = el('section', { class: 'attachments-section', 'aria-labelledby': 'attachments-heading' },
    el('h2', { id: 'attachments-heading' }, 'Attachments'));
  if (groups.length === 0) {
    list.appendChild(el('p', null, kind === 'payload'
      ? 'No media found in this payload. Media is looked for only under the keys each provider uses (image_url, fcm_options.image, notification.image, att, …); other structures are not searched.'
      : 'The service returned no attachment.'));
  } else {
    const cards = el('ol', { class: 'attachments' });
    groups.forEach((group, position) => cards.appendChild(card(group, position, context)));
    list.appendChild(cards);
  }
  results.appendChild(list);

  if (kind === 'payload') {
    if (result.payload !== undefined && result.payload !== null) {
      results.appendChild(rewrittenSection(payloadText(rawDocument, options && options.rawPath ? options.rawPath : ['payload'], result.payload)));
    } else if (options && options.rewriteUnavailable) {
      results.appendChild(el('section', { class: 'rewritten-section', 'aria-labelledby': 'rewritten-heading' },
        el('h2', { id: 'rewritten-heading' }, 'Rewritten payload'),
        el('p', null, 'Not available: this service does not publish files (it runs without --publish-dir and --public-base), so it cannot put published URLs into the payload.')));
    }
    if (options && options.showPayload && isObj(payload)) {
      results.appendChild(el('section', { class: 'given-section', 'aria-labelledby': 'given-heading' },
        el('h2', { id: 'given-heading' }, 'The payload as given'),
        el('details', null, el('summary', null, 'Show the payload'),
          el('pre', { class: 'json', tabindex: '0', 'aria-label': 'The payload as given (JSON)' }, JSON.stringify(payload, null, 2)))));
    }
  }
  return summaryText(groups, result);
}
