/*
 * The push payload as the inspector reads it: its JSON as sent, its titles and bodies, which
 * platforms read a media key, and the attachments grouped by URL.
 */
import { isObj, nonEmpty, dig } from './inspector-format.js';

// ---------------------------------------------------------------------------------------
// JSON as sent: find a value's raw text and pretty-print it with its numbers untouched

function rawValueAt(text, path) {
  let index = 0;
  const length = text.length;
  function space() { while (index < length && ' \t\n\r'.indexOf(text[index]) >= 0) index += 1; }
  function skipString() {
    index += 1;
    while (index < length) {
      const character = text[index];
      if (character === '\\') index += 2;
      else if (character === '"') { index += 1; return; } else index += 1;
    }
    throw new Error('unterminated string');
  }
  function skipValue() {
    space();
    const character = text[index];
    if (character === '"') { skipString(); return; }
    if (character === '{' || character === '[') {
      const close = character === '{' ? '}' : ']';
      index += 1;
      space();
      if (text[index] === close) { index += 1; return; }
      for (;;) {
        if (close === '}') { space(); skipString(); space(); index += 1; }
        skipValue();
        space();
        if (text[index] === ',') { index += 1; continue; }
        if (text[index] === close) { index += 1; return; }
        throw new Error('malformed JSON');
      }
    }
    while (index < length && ',}] \t\n\r'.indexOf(text[index]) < 0) index += 1;
  }
  function find(keys) {
    space();
    if (keys.length === 0) {
      const start = index;
      skipValue();
      return text.slice(start, index);
    }
    if (text[index] !== '{') return null;
    index += 1;
    space();
    if (text[index] === '}') return null;
    for (;;) {
      space();
      const keyStart = index;
      skipString();
      const key = JSON.parse(text.slice(keyStart, index));
      space();
      index += 1; // the colon
      if (key === keys[0]) return find(keys.slice(1));
      skipValue();
      space();
      if (text[index] === ',') { index += 1; continue; }
      return null;
    }
  }
  try {
    return find(path);
  } catch (error) {
    return null;
  }
}

/** Indents JSON text; numbers and literals are copied as they are, strings normalised. */
function prettyJSON(raw) {
  let out = '';
  let depth = 0;
  let index = 0;
  const length = raw.length;
  const newline = () => '\n' + '  '.repeat(depth);
  while (index < length) {
    const character = raw[index];
    if (character === '"') {
      let end = index + 1;
      while (end < length && raw[end] !== '"') end += raw[end] === '\\' ? 2 : 1;
      out += JSON.stringify(JSON.parse(raw.slice(index, end + 1)));
      index = end + 1;
    } else if (character === '{' || character === '[') {
      let next = index + 1;
      while (next < length && /\s/.test(raw[next])) next += 1;
      if (raw[next] === (character === '{' ? '}' : ']')) {
        out += character + raw[next];
        index = next + 1;
      } else {
        depth += 1;
        out += character + newline();
        index += 1;
      }
    } else if (character === '}' || character === ']') {
      depth -= 1;
      out += newline() + character;
      index += 1;
    } else if (character === ',') {
      out += ',' + newline();
      index += 1;
    } else if (character === ':') {
      out += ': ';
      index += 1;
    } else if (/\s/.test(character)) {
      index += 1;
    } else {
      let end = index;
      while (end < length && !/[\s,\]}:]/.test(raw[end])) end += 1;
      out += raw.slice(index, end);
      index = end;
    }
  }
  return out;
}

export function payloadText(rawDocument, path, value) {
  if (rawDocument) {
    const raw = rawValueAt(rawDocument, path);
    if (raw) {
      try {
        return prettyJSON(raw);
      } catch (error) { /* fall through */ }
    }
  }
  return JSON.stringify(value, null, 2);
}

// ---------------------------------------------------------------------------------------
// The payload: titles and bodies, and which platforms read a media key

function apsText(aps) {
  if (!isObj(aps)) return {};
  const alert = aps.alert;
  if (typeof alert === 'string') return { body: nonEmpty(alert) };
  if (isObj(alert)) return { title: nonEmpty(alert.title), subtitle: nonEmpty(alert.subtitle), body: nonEmpty(alert.body) };
  return {};
}
function fcmText(notification) {
  return isObj(notification) ? { title: nonEmpty(notification.title), body: nonEmpty(notification.body) } : {};
}
function languageText(value) {
  if (typeof value === 'string') return nonEmpty(value);
  if (isObj(value)) {
    if (nonEmpty(value.en)) return value.en;
    for (const text of Object.values(value)) if (nonEmpty(text)) return text;
  }
  return null;
}
function oneSignalText(payload) {
  return { title: languageText(payload.headings), subtitle: languageText(payload.subtitle), body: languageText(payload.contents) };
}
function firstOfEach(sources) {
  const out = {};
  for (const field of ['title', 'subtitle', 'body']) {
    for (const source of sources) {
      if (source && source[field]) { out[field] = source[field]; break; }
    }
  }
  return out;
}
/** What each platform would show as title and body; a field's first source wins. */
export function notificationTexts(payload) {
  if (!isObj(payload)) return { ios: {}, android: {} };
  const apsRoot = apsText(payload.aps);
  const apsFCM = apsText(dig(payload, 'message', 'apns', 'payload', 'aps'));
  const apsLegacy = apsText(dig(payload, 'apns', 'payload', 'aps'));
  const shared = fcmText(dig(payload, 'message', 'notification'));
  const legacy = fcmText(payload.notification);
  const android = fcmText(dig(payload, 'message', 'android', 'notification'));
  const androidLegacy = fcmText(dig(payload, 'android', 'notification'));
  const oneSignal = oneSignalText(payload);
  return {
    ios: firstOfEach([apsRoot, apsFCM, apsLegacy, shared, legacy, oneSignal]),
    android: firstOfEach([android, androidLegacy, shared, legacy, oneSignal, apsRoot, apsFCM, apsLegacy]),
  };
}

/** The platforms that read a media key (docs/payloads.md); null for a plain URL. */
export function keyPlatforms(path) {
  if (typeof path !== 'string') return null;
  if (/^(message\.)?(notification|data)\.image$/.test(path)) return ['ios', 'android'];
  if (path === 'message.android.notification.image' || path === 'big_picture') return ['android'];
  return ['ios'];
}

/** Whether this result checked Android (so a missing `variants` entry means "fits as is"). */
export function androidChecked(result, kind) {
  const listed = Array.isArray(result.platforms) ? result.platforms : null;
  if (listed) return listed.indexOf('android') >= 0;
  const descriptors = Array.isArray(result.attachments) ? result.attachments : [];
  if (descriptors.some((d) => isObj(d.variants) || (Array.isArray(d.platforms) && d.platforms.indexOf('android') >= 0))) return true;
  if (kind === 'payload' && descriptors.some((d) => (keyPlatforms(d.payloadPath) || []).indexOf('android') >= 0)) return true;
  return false;
}

// ---------------------------------------------------------------------------------------
// Grouping: the same URL under several keys of a payload is one attachment

export function groupDescriptors(descriptors) {
  const groups = [];
  const byKey = new Map();
  descriptors.forEach((descriptor, index) => {
    if (!isObj(descriptor)) return;
    let key = null;
    if (typeof descriptor.payloadPath === 'string') {
      key = JSON.stringify([descriptor.url, descriptor.role || null, descriptor.options || null, descriptor.status,
        descriptor.reason ? descriptor.reason.code : null, descriptor.sha256 || null]);
    }
    if (key !== null && byKey.has(key)) {
      byKey.get(key).members.push(descriptor);
      return;
    }
    const group = { descriptor, index, members: [descriptor] };
    groups.push(group);
    if (key !== null) byKey.set(key, group);
  });
  return groups;
}

export function groupPlatforms(group) {
  const found = new Set();
  let any = false;
  for (const member of group.members) {
    const platforms = keyPlatforms(member.payloadPath);
    if (!platforms) return null;
    any = true;
    platforms.forEach((platform) => found.add(platform));
  }
  return any ? found : null;
}
