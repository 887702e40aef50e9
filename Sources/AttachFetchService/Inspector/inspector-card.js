/* One attachment's card in the inspector. */
import { STATUS_MARK } from './inspector-constants.js';
import { str, baseName, isObj, stripStop } from './inspector-format.js';
import { el, link, code } from './inspector-dom.js';
import { keyPlatforms } from './inspector-payload.js';
import { deliveredSentence, transformSentences, reasonSentence, SKIPPED_TEXT } from './inspector-verdict.js';
import { androidOutcome, iosPreview, iosFacts, androidPreview, androidFacts } from './inspector-platforms.js';
import { waterfall } from './inspector-waterfall.js';

// ---------------------------------------------------------------------------------------
// One attachment

function statusBadge(status) {
  const word = str(status) || 'unknown';
  return el('p', { class: 'badge badge-' + word },
    el('span', { class: 'mark', 'aria-hidden': 'true' }, (STATUS_MARK[word] || '?') + ' '),
    el('span', { class: 'visually-hidden' }, 'Status: '),
    el('span', { class: 'status' }, word));
}

export function card(group, position, context) {
  const descriptor = group.descriptor;
  const status = str(descriptor.status) || 'unknown';
  const ready = status === 'ready';
  const id = 'card-' + position;
  const title = baseName(descriptor.url) || descriptor.identifier || 'attachment ' + (position + 1);
  const item = el('li', { class: 'attachment status-' + status, id, 'aria-labelledby': id + '-title' });

  item.appendChild(el('div', { class: 'card-head' },
    el('h3', { id: id + '-title' }, el('span', { class: 'card-number' }, (position + 1) + '. '), title),
    statusBadge(status)));

  // Where it came from.
  const origin = el('dl', { class: 'origin' });
  const originRow = (term, ...value) => origin.appendChild(el('div', { class: 'fact' }, el('dt', null, term), el('dd', null, value)));
  originRow('URL', link(descriptor.url));
  if (descriptor.finalUrl && descriptor.finalUrl !== descriptor.url) originRow('After redirects', link(descriptor.finalUrl));
  if (group.members.some((member) => typeof member.payloadPath === 'string')) {
    const keys = el('ul', { class: 'keys' });
    for (const member of group.members) {
      const platforms = keyPlatforms(member.payloadPath) || [];
      keys.appendChild(el('li', null, code(str(member.payloadPath), 'payload-path'),
        ' — read by ' + (platforms.length === 2 ? 'iOS and Android' : platforms[0] === 'android' ? 'Android only' : 'iOS'),
        member.role ? ', role ' : '', member.role ? code(member.role, 'role') : null));
    }
    originRow(group.members.length > 1 ? 'Payload keys' : 'Payload key', keys);
  } else if (descriptor.role) {
    originRow('Role', code(descriptor.role, 'role'));
  }
  if (descriptor.identifier && descriptor.identifier !== descriptor.payloadPath) originRow('Identifier', code(descriptor.identifier));
  item.appendChild(origin);

  // The verdict in words.
  const verdict = el('section', { class: 'verdict' }, el('h4', { class: 'visually-hidden' }, 'Verdict'));
  const reason = isObj(descriptor.reason) ? descriptor.reason : null;
  if (ready) {
    verdict.appendChild(el('p', { class: 'reason-sentence' }, [deliveredSentence(descriptor)].concat(transformSentences(descriptor)).join(' ')));
    verdict.appendChild(el('p', { class: 'reason-code-line' }, 'Status ', code('ready', 'reason-code'),
      Array.isArray(descriptor.transforms) && descriptor.transforms.length ? ', transforms ' : '',
      Array.isArray(descriptor.transforms) && descriptor.transforms.length ? code(descriptor.transforms.join(', '), 'transforms') : null));
  } else {
    const said = reasonSentence(descriptor, context);
    verdict.appendChild(el('p', { class: 'reason-sentence' }, said));
    verdict.appendChild(el('p', { class: 'reason-code-line' }, 'Reason code ', code(reason && reason.code ? reason.code : 'none', 'reason-code')));
    if (reason && reason.message && said.toLowerCase().indexOf(stripStop(reason.message).toLowerCase()) < 0) verdict.appendChild(el('p', { class: 'reason-message' }, 'The service\'s words: ', el('q', null, String(reason.message))));
  }
  const skipped = Array.isArray(descriptor.skippedAtDeadline) ? descriptor.skippedAtDeadline : [];
  if (skipped.length) {
    const list = el('ul', { class: 'skipped' });
    for (const step of skipped) {
      list.appendChild(el('li', null, el('span', { class: 'mark', 'aria-hidden': 'true' }, '⚠ '),
        'Cut short by the deadline (', code(String(step)), '): ', SKIPPED_TEXT[step] || 'this step did not run.'));
    }
    verdict.appendChild(list);
  }
  item.appendChild(verdict);

  // How it will look, and the facts, per platform.
  const outcome = androidOutcome(descriptor, context.androidChecked);
  const platforms = el('div', { class: 'platforms' },
    el('section', { class: 'platform platform-ios' },
      el('h4', null, 'iOS'),
      iosPreview(group, context.texts.ios, context),
      iosFacts(descriptor)),
    el('section', { class: 'platform platform-android' },
      el('h4', null, 'Android'),
      androidPreview(group, context.texts.android, outcome),
      androidFacts(descriptor, outcome, context.androidChecked)));
  item.appendChild(platforms);

  item.appendChild(waterfall(descriptor, context.scale, context.deadlineMs));
  return item;
}
