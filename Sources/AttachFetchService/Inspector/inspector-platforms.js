/*
 * The inspector per platform: the iOS and Android notification mocks, their facts, App
 * Transport Security.
 */
import {
  OPTION_HIDDEN, ANDROID_STILL_TYPES, ANDROID_LIMIT, IOS_LIMITS, OPTION_CLIP, OPTION_TIME,
} from './inspector-constants.js';
import {
  str, hostOf, isObj, sentence, baseName, baseMime, stripStop, isNum, formatName, bytes, exactBytes,
  limitText, dimensions, seconds, isHttpURL,
} from './inspector-format.js';
import { el, code, link } from './inspector-dom.js';
import { groupPlatforms } from './inspector-payload.js';
import { image, typeFromName } from './inspector-images.js';

// ---------------------------------------------------------------------------------------
// App Transport Security

function atsRemedy(problem, descriptor) {
  const codeName = str(problem.code);
  const message = str(problem.message);
  if (codeName === 'insecureScheme' || codeName === 'insecureRedirect') {
    let host = hostOf(descriptor.url);
    if (codeName === 'insecureRedirect') {
      const hop = /\((https?:\/\/[^)\s]+)\)/.exec(message);
      host = (hop && hostOf(hop[1])) || hostOf(descriptor.finalUrl) || host;
    }
    return { host: host || '<host>', key: 'NSExceptionAllowsInsecureHTTPLoads', value: true, text: 'YES',
      advice: 'Better: serve the media over https.' };
  }
  if (codeName === 'tlsVersion') {
    const version = /TLSv1(\.[01])?\b/.exec(message);
    const value = version && version[0] !== 'TLSv1' ? version[0] : 'TLSv1.0';
    return { host: hostOf(descriptor.finalUrl || descriptor.url) || '<host>', key: 'NSExceptionMinimumTLSVersion', value, text: value,
      advice: 'Better: enable TLS 1.2 or 1.3 on the server.' };
  }
  if (codeName === 'cipherNotForwardSecret') {
    return { host: hostOf(descriptor.finalUrl || descriptor.url) || '<host>', key: 'NSExceptionRequiresForwardSecrecy', value: false, text: 'NO',
      advice: 'Better: offer ECDHE cipher suites (or TLS 1.3) on the server.' };
  }
  if (codeName === 'certificateSignature' || codeName === 'certificateKeySize') {
    return { none: 'No Info.plist key helps (short of NSAllowsArbitraryLoads, which turns ATS off for every host): fix the server with a new certificate — SHA-256 signatures, RSA 2048 or ECC 256 bits or more.' };
  }
  return { none: 'See Apple\'s App Transport Security documentation for this problem.' };
}

function xmlText(text) { return String(text).replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;'); }

function plistSnippet(remedies) {
  const hosts = new Map();
  for (const remedy of remedies) {
    if (!remedy.key) continue;
    if (!hosts.has(remedy.host)) hosts.set(remedy.host, new Map());
    hosts.get(remedy.host).set(remedy.key, remedy.value);
  }
  if (hosts.size === 0) return null;
  const lines = ['<key>NSAppTransportSecurity</key>', '<dict>', '  <key>NSExceptionDomains</key>', '  <dict>'];
  for (const [host, keys] of hosts) {
    lines.push('    <key>' + xmlText(host) + '</key>', '    <dict>');
    for (const [key, value] of keys) {
      lines.push('      <key>' + key + '</key>');
      lines.push(typeof value === 'boolean' ? '      <' + value + '/>' : '      <string>' + xmlText(value) + '</string>');
    }
    lines.push('    </dict>');
  }
  lines.push('  </dict>', '</dict>');
  return lines.join('\n');
}

function atsFacts(descriptor) {
  const ats = descriptor.ats;
  if (!isObj(ats)) {
    return el('p', null, 'Not checked: no request was made (App Transport Security applies to http and https downloads).');
  }
  if (ats.compliant) {
    return el('p', { class: 'ok-text' }, el('span', { class: 'mark', 'aria-hidden': 'true' }, '✓ '),
      'Compliant: iOS loads it with no Info.plist exception.');
  }
  const problems = Array.isArray(ats.problems) ? ats.problems.filter(isObj) : [];
  const remedies = [];
  const list = el('ul', { class: 'ats-problems' });
  for (const problem of problems) {
    const remedy = atsRemedy(problem, descriptor);
    remedies.push(remedy);
    const keys = remedy.key
      ? el('p', { class: 'ats-keys' }, 'The app would need: ',
        code('NSAppTransportSecurity → NSExceptionDomains → ' + remedy.host + ' → ' + remedy.key + ' = ' + remedy.text, 'plist-path'),
        '. ' + remedy.advice)
      : el('p', { class: 'ats-keys' }, remedy.none);
    list.appendChild(el('li', null, el('p', null, code(str(problem.code), 'ats-code'), ' ', sentence(problem.message)), keys));
  }
  const container = el('div', { class: 'ats' },
    el('p', { class: 'bad-text' }, el('span', { class: 'mark', 'aria-hidden': 'true' }, '✕ '),
      'Not compliant: iOS refuses to load it unless the app makes an exception' +
      (problems.length ? '.' : ' (no problem listed).')),
    list);
  const snippet = plistSnippet(remedies);
  if (snippet) {
    container.appendChild(el('details', { class: 'plist' },
      el('summary', null, 'Info.plist snippet'),
      el('pre', { tabindex: '0', 'aria-label': 'Info.plist keys for this exception' }, snippet)));
  }
  return container;
}

// ---------------------------------------------------------------------------------------
// The notification mocks

function textLine(className, text, placeholder) {
  return text
    ? el('p', { class: className }, text)
    : el('p', { class: className + ' placeholder' }, placeholder);
}

function itemName(descriptor) {
  return descriptor.payloadPath || descriptor.identifier || baseName(descriptor.url);
}

export function iosPreview(group, texts, context) {
  const descriptor = group.descriptor;
  const platforms = groupPlatforms(group);
  const preview = el('div', { class: 'ios-preview' });
  if (platforms && !platforms.has('ios')) {
    preview.appendChild(el('p', { class: 'key-note' }, 'iOS does not read this key (' + group.members.map((m) => m.payloadPath).join(', ') +
      '): on iOS this media is not attached. What it would look like:'));
  }
  const ready = descriptor.status === 'ready';
  const thumbnail = isObj(descriptor.thumbnail) && descriptor.thumbnail.file ? descriptor.thumbnail : null;
  const options = isObj(descriptor.options) ? descriptor.options : {};
  const hidden = options[OPTION_HIDDEN] === true;
  const avatar = descriptor.role === 'avatar';
  const name = itemName(descriptor);
  const titleLine = textLine('notification-title', texts.title, 'Title');
  const bodyLine = textLine('notification-body', texts.body, 'Body');
  const subtitle = texts.subtitle ? el('p', { class: 'notification-subtitle' }, texts.subtitle) : null;

  const icon = avatar && ready && thumbnail
    ? image('thumbnail avatar', 'Sender avatar from ' + name + ', as iOS shows it in place of the app icon', thumbnail.file, thumbnail.publishedUrl)
    : el('span', { class: 'app-icon', 'aria-hidden': 'true' }, 'A');
  const side = ready && thumbnail && !hidden && !avatar
    ? image('thumbnail thumbnail-side', 'Thumbnail of ' + name + ' as iOS shows it beside the notification', thumbnail.file, thumbnail.publishedUrl)
    : null;
  if (side) showSquare(side.querySelector('img'), descriptor.thumbnailClip);
  const banner = el('div', { class: 'ios-banner' },
    icon,
    el('div', { class: 'ios-text' },
      el('p', { class: 'ios-app' }, el('span', { class: 'app-name' }, 'Your app'), el('span', { class: 'ios-time' }, 'now')),
      titleLine, subtitle, bodyLine),
    side);
  preview.appendChild(el('p', { class: 'mock-label' }, 'iOS, on the lock screen'));
  preview.appendChild(banner);

  if (!ready) {
    preview.appendChild(el('p', { class: 'mock-note' }, 'No attachment: the notification shows its text only.'));
    return preview;
  }
  if (avatar) {
    preview.appendChild(el('p', { class: 'mock-note' }, 'A communication notification: the sender\'s image takes the place of the app icon.'));
    return preview;
  }
  if (descriptor.kind === 'audio') {
    preview.appendChild(el('p', { class: 'mock-note' }, 'Sound attachment: iOS shows a play control when the notification is expanded.'));
    return preview;
  }
  if (!thumbnail) {
    preview.appendChild(el('p', { class: 'mock-note' }, 'Attached, but no thumbnail was made' +
      (Array.isArray(descriptor.skippedAtDeadline) && descriptor.skippedAtDeadline.indexOf('thumbnail') >= 0 ? ' (the deadline came first)' : '') +
      ': iOS shows its own placeholder.'));
    return preview;
  }
  if (hidden) preview.appendChild(el('p', { class: 'mock-note' }, 'The payload hides the thumbnail (ThumbnailHiddenKey): it shows only when the notification is expanded.'));
  preview.appendChild(el('p', { class: 'mock-label' }, 'Expanded (long press)'));
  preview.appendChild(el('div', { class: 'ios-expanded' },
    image('thumbnail thumbnail-expanded', 'Expanded notification: the thumbnail of ' + name + (descriptor.kind === 'video' ? ' (the poster frame of the video)' : ''), thumbnail.file, thumbnail.publishedUrl),
    el('div', { class: 'ios-expanded-text' },
      textLine('notification-title', texts.title, 'Title'),
      textLine('notification-body', texts.body, 'Body'))));
  return preview;
}

/** What Android does with this attachment: {shown, file, published, what, reason, codeName}. */
export function androidOutcome(descriptor, checked) {
  const variant = isObj(descriptor.variants) && isObj(descriptor.variants.android) ? descriptor.variants.android : null;
  const mime = baseMime(descriptor.mimeType);
  const thumbnail = isObj(descriptor.thumbnail) ? descriptor.thumbnail : null;
  if (descriptor.status !== 'ready') {
    return { shown: false, reason: 'The attachment was not delivered (' + descriptor.status + ', see the verdict): the notification shows its text only.' };
  }
  if (variant && variant.file && variant.status !== 'unsupported' && variant.status !== 'failed') {
    return { shown: true, file: variant.file, published: variant.publishedUrl, variant, what: 'variant' };
  }
  if (variant && variant.status === 'unsupported') {
    const reason = isObj(variant.reason) ? variant.reason : {};
    return { shown: false, codeName: str(reason.code) || 'unsupportedOnPlatform', reason: sentence(stripStop(reason.message || 'Android cannot show this kind of media')) };
  }
  if (variant && variant.status === 'failed') {
    const reason = isObj(variant.reason) ? variant.reason : {};
    return { shown: false, codeName: str(reason.code), reason: 'The Android variant could not be made: ' + stripStop(reason.message || 'no reason given') + '.' };
  }
  if (descriptor.kind === 'audio' || descriptor.kind === 'video') {
    return { shown: false, codeName: 'unsupportedOnPlatform', reason: 'Android shows no ' + descriptor.kind + ' in a notification, only a still image (JPEG, PNG or BMP) of at most 1 MB.' };
  }
  const fits = ANDROID_STILL_TYPES.indexOf(mime) >= 0 && isNum(descriptor.bytes) && descriptor.bytes <= ANDROID_LIMIT;
  if (fits) {
    return { shown: true, file: thumbnail && thumbnail.file, published: thumbnail && thumbnail.publishedUrl, what: 'delivered', notChecked: !checked };
  }
  if (!checked) {
    return { shown: false, notChecked: true, reason: 'This result has no Android variant (the service checks Android with --platforms ios,android). As delivered, this ' + formatName(mime) + ' of ' + bytes(descriptor.bytes) + ' is not what Android shows (a still JPEG, PNG or BMP of at most 1 MB).' };
  }
  return { shown: false, reason: 'No Android variant was made, and this ' + formatName(mime) + ' of ' + bytes(descriptor.bytes) + ' is not what Android shows (a still JPEG, PNG or BMP of at most 1 MB).' };
}

export function androidPreview(group, texts, outcome) {
  const descriptor = group.descriptor;
  const platforms = groupPlatforms(group);
  const preview = el('div', { class: 'android-preview' });
  if (platforms && !platforms.has('android')) {
    preview.appendChild(el('p', { class: 'key-note' }, 'Android does not read this key (' + group.members.map((m) => m.payloadPath).join(', ') +
      '): Android gets this media only under notification.image, data.image or android.notification.image. What it would look like:'));
  }
  preview.appendChild(el('p', { class: 'mock-label' }, 'Android, expanded (big picture)'));
  const card = el('div', { class: 'android-card' },
    el('p', { class: 'android-head' }, el('span', { class: 'android-icon', 'aria-hidden': 'true' }), 'Your app · now'),
    textLine('notification-title', texts.title, 'Title'),
    textLine('notification-body', texts.body, 'Body'));
  if (outcome.shown && outcome.file) {
    const name = itemName(descriptor);
    const alt = outcome.what === 'variant'
      ? 'Android big picture: the Android variant of ' + name
      : 'Android big picture: the delivered image of ' + name + ' (its thumbnail)';
    card.appendChild(image('android-image', alt, outcome.file, outcome.published));
  } else if (outcome.shown) {
    card.appendChild(el('div', { class: 'android-not-shown' }, 'Shown on Android, but no picture of it was made here.'));
  } else {
    card.appendChild(el('div', { class: outcome.notChecked ? 'android-not-shown android-not-checked' : 'android-not-shown' },
      el('p', { class: 'not-shown-title' }, outcome.notChecked ? 'Android not checked' : 'Not shown on Android'),
      el('p', null, outcome.reason),
      outcome.codeName ? el('p', null, 'Code: ', code(outcome.codeName)) : null));
  }
  preview.appendChild(card);
  return preview;
}

// ---------------------------------------------------------------------------------------
// Per platform facts

function factList(rows) {
  const list = el('dl', { class: 'facts' });
  for (const [term, ...value] of rows) {
    if (value.length === 0 || value[0] === null || value[0] === undefined || value[0] === '') continue;
    list.appendChild(el('div', { class: 'fact' }, el('dt', null, term), el('dd', null, value)));
  }
  return list;
}

/** A unit-square rectangle with four numbers, or null. */
function square(clip) {
  return isObj(clip) && [clip.x, clip.y, clip.width, clip.height].every(isNum) ? clip : null;
}

/**
 * Shows in the square side thumbnail (`object-fit: cover`) the square attach-fetch chose for
 * iOS (`thumbnailClip`): the picture slides so that the chosen square fills the box. The
 * rectangle is kept on the element (`data-clip`) for people and tests.
 */
function showSquare(img, clip) {
  const chosen = square(clip);
  if (!img || !chosen) return;
  const along = (start, size) => (size < 1 ? Math.min(100, Math.max(0, (start / (1 - size)) * 100)) : 50);
  img.style.objectPosition = along(chosen.x, chosen.width).toFixed(1) + '% ' + along(chosen.y, chosen.height).toFixed(1) + '%';
  img.dataset.clip = [chosen.x, chosen.y, chosen.width, chosen.height].map((v) => v.toFixed(3)).join(',');
}

export function iosFacts(descriptor) {
  const ready = descriptor.status === 'ready';
  const mime = descriptor.mimeType;
  const limit = IOS_LIMITS[descriptor.kind];
  const rows = [];
  rows.push(['Shown', !ready ? 'No: the attachment was not delivered (' + descriptor.status + ').'
    : descriptor.role === 'avatar' ? 'Yes, as the sender\'s image of a communication notification.' : 'Yes, as the notification\'s attachment.']);
  if (mime) rows.push(['Type', formatName(mime) + ' (', code(mime), ')' + (descriptor.kind ? ', ' + descriptor.kind : '') + (ready ? '' : ', as sniffed')]);
  if (descriptor.declaredMimeType && baseMime(descriptor.declaredMimeType) !== baseMime(mime)) {
    rows.push(['Server said', code(descriptor.declaredMimeType), ' (Content-Type; the bytes decide)']);
  }
  if (isNum(descriptor.bytes)) {
    rows.push(['Size', bytes(descriptor.bytes) + ' (' + exactBytes(descriptor.bytes) + ')' + (limit ? '; iOS takes ' + ({ image: 'images', audio: 'sound', video: 'video' }[descriptor.kind] || descriptor.kind) + ' up to ' + limitText(limit) : '')]);
  }
  if (isNum(descriptor.sourceBytes) && descriptor.sourceBytes !== descriptor.bytes) {
    rows.push(['Original', (descriptor.sourceMimeType ? formatName(descriptor.sourceMimeType) + ', ' : '') + bytes(descriptor.sourceBytes) +
      (dimensions(descriptor.sourceWidth, descriptor.sourceHeight) ? ', ' + dimensions(descriptor.sourceWidth, descriptor.sourceHeight) : '')]);
  }
  if (descriptor.uti || descriptor.fileExtension) {
    rows.push(['UTI / extension', descriptor.uti ? code(descriptor.uti) : '—', ' / ', descriptor.fileExtension ? code('.' + descriptor.fileExtension) : '—']);
  }
  const size = dimensions(descriptor.width, descriptor.height);
  if (size) rows.push(['Dimensions', size + ' (as displayed)']);
  if (isNum(descriptor.duration)) rows.push(['Duration', seconds(descriptor.duration)]);
  if (descriptor.videoCodec || descriptor.audioCodec) {
    rows.push(['Codecs', [descriptor.videoCodec ? 'video ' + descriptor.videoCodec : '', descriptor.audioCodec ? 'audio ' + descriptor.audioCodec : ''].filter(Boolean).join(', ')]);
  }
  if (isObj(descriptor.thumbnail)) {
    const thumbnail = descriptor.thumbnail;
    rows.push(['Thumbnail', (dimensions(thumbnail.width, thumbnail.height) || 'made') + ' ' + formatName(typeFromName(thumbnail.file)) +
      (isNum(thumbnail.time) ? ', frame at ' + seconds(thumbnail.time) : '')]);
  } else if (ready && descriptor.kind !== 'audio') {
    rows.push(['Thumbnail', 'none']);
  }
  const chosen = square(descriptor.thumbnailClip);
  if (chosen) {
    rows.push(['Thumbnail square', 'chosen around what matters: from ' + Math.round(chosen.x * 100) + ' % across and ' +
      Math.round(chosen.y * 100) + ' % down, ' + Math.round(chosen.width * 100) + ' % × ' + Math.round(chosen.height * 100) + ' % of the picture']);
  }
  const options = isObj(descriptor.options) ? descriptor.options : null;
  if (options) {
    const parts = [];
    const clip = options[OPTION_CLIP];
    if (isObj(clip)) parts.push('clipped to x ' + clip.X + ', y ' + clip.Y + ', ' + clip.Width + ' × ' + clip.Height + ' of the image (already applied to the thumbnail)');
    if (isNum(options[OPTION_TIME])) parts.push('poster frame at ' + seconds(options[OPTION_TIME]));
    if (options[OPTION_HIDDEN] === true) parts.push('thumbnail hidden');
    if (parts.length) rows.push(['Options', parts.join('; ')]);
  }
  rows.push(['App Transport Security', atsFacts(descriptor)]);
  if (isHttpURL(descriptor.publishedUrl)) rows.push(['Published at', link(descriptor.publishedUrl)]);
  if (descriptor.cache && descriptor.cache !== 'miss') {
    const cacheWords = { hit: 'a fresh result from the service\'s cache', revalidated: 'a cached result the origin confirmed (304)', coalesced: 'shared with a request for the same URL already under way' };
    rows.push(['Cache', cacheWords[descriptor.cache] || String(descriptor.cache)]);
  }
  return factList(rows);
}

export function androidFacts(descriptor, outcome, checked) {
  const rows = [];
  const variant = isObj(descriptor.variants) && isObj(descriptor.variants.android) ? descriptor.variants.android : null;
  if (outcome.shown && outcome.what === 'variant') {
    rows.push(['Shown', 'Yes: an Android variant was made, and Android shows it.']);
    rows.push(['Variant', formatName(variant.mimeType) + ' (', code(str(variant.mimeType) || 'unknown'), ')' +
      (dimensions(variant.width, variant.height) ? ', ' + dimensions(variant.width, variant.height) : '') + ', ' + bytes(variant.bytes) +
      (isNum(variant.bytes) ? ' (' + exactBytes(variant.bytes) + ')' : '')]);
    const transforms = Array.isArray(variant.transforms) ? variant.transforms : [];
    if (transforms.length) rows.push(['Done to it', transforms.map(String).join(', ')]);
    if (transforms.indexOf('cropped') >= 0) rows.push(['Cut', 'to 2:1 around what matters, the shape Android shows a big picture in']);
    if (isHttpURL(variant.publishedUrl)) rows.push(['Published at', link(variant.publishedUrl)]);
  } else if (outcome.shown) {
    rows.push(['Shown', checked ? 'Yes: no variant needed, Android shows the delivered file.' : 'Yes, by Android\'s rule: a still JPEG, PNG or BMP within 1 MB needs no variant.']);
    rows.push(['Format', formatName(descriptor.mimeType) + ' (', code(str(descriptor.mimeType)), ')']);
    rows.push(['Size', bytes(descriptor.bytes) + ' (' + exactBytes(descriptor.bytes) + ') of the 1 MB (1,000,000 bytes) Android shows']);
    if (!checked) rows.push(['Checked', 'Android not checked: this result has no Android facts (variants appear when the service runs with --platforms ios,android).']);
  } else {
    rows.push(['Shown', outcome.notChecked ? 'Android not checked.' : 'No.']);
    if (descriptor.status === 'ready') {
      if (descriptor.mimeType) rows.push(['Format', formatName(descriptor.mimeType) + ' (', code(str(descriptor.mimeType)), ')']);
      if (isNum(descriptor.bytes)) rows.push(['Size', bytes(descriptor.bytes) + ' (' + exactBytes(descriptor.bytes) + ')']);
    }
    if (variant && variant.status) rows.push(['Variant', String(variant.status) + (isObj(variant.reason) && variant.reason.code ? ' — ' : ''), isObj(variant.reason) && variant.reason.code ? code(variant.reason.code) : null]);
  }
  rows.push(['Android shows', 'a still JPEG, PNG or BMP of at most 1 MB (1,000,000 bytes); no sound, no video, no animation']);
  return factList(rows);
}
