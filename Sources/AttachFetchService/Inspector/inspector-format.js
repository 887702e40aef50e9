/* The inspector's small helpers: values, text, numbers, sizes, MIME types and URLs in words. */
import { MIB, ANDROID_LIMIT, FORMATS } from './inspector-constants.js';

// ---------------------------------------------------------------------------------------
// Small helpers

export function isObj(value) { return value !== null && typeof value === 'object' && !Array.isArray(value); }
export function isNum(value) { return typeof value === 'number' && Number.isFinite(value); }
export function str(value) { return typeof value === 'string' ? value : ''; }
export function nonEmpty(value) { return typeof value === 'string' && value.trim() !== '' ? value : null; }
export function dig(object, ...keys) {
  let current = object;
  for (const key of keys) {
    if (!isObj(current)) return undefined;
    current = current[key];
  }
  return current;
}
/** Capitalises a first word like "the", never a name like "iOS". */
export function cap(text) { return text && /^[a-z](?![A-Z])/.test(text) ? text.charAt(0).toUpperCase() + text.slice(1) : text; }
export function sentence(text) {
  const trimmed = str(text).trim();
  if (!trimmed) return '';
  return /[.!?…]$/.test(trimmed) ? cap(trimmed) : cap(trimmed) + '.';
}
export function stripStop(text) { return str(text).trim().replace(/[.]+$/, ''); }

export function isHttpURL(text) { return typeof text === 'string' && /^https?:\/\//i.test(text); }

export function hostOf(url) {
  try {
    return new URL(url).hostname.replace(/^\[|\]$/g, '') || null;
  } catch (error) {
    return null;
  }
}
export function baseName(url) {
  try {
    const parsed = new URL(url);
    const parts = parsed.pathname.split('/').filter(Boolean);
    const last = parts.length ? parts[parts.length - 1] : '';
    let decoded = last;
    try { decoded = decodeURIComponent(last); } catch (error) { /* keep it encoded */ }
    return decoded || parsed.host || url;
  } catch (error) {
    return str(url).slice(0, 80);
  }
}

const numberFormat = new Intl.NumberFormat('en-US');
export function int(value) { return numberFormat.format(Math.round(value)); }
/** Decimal units throughout (1 KB = 1,000 bytes, 1 MB = 1,000,000 bytes), as the footer says. */
export function bytes(value) {
  if (!isNum(value)) return 'an unknown size';
  if (value < 1000) return int(value) + (value === 1 ? ' byte' : ' bytes');
  if (value < 999500) {
    const kb = value / 1000;
    return (kb < 10 ? kb.toFixed(1) : int(kb)) + ' KB';
  }
  if (value < 1e9) return (value / 1e6).toFixed(1) + ' MB';
  return (value / 1e9).toFixed(2) + ' GB';
}
export function exactBytes(value) { return isNum(value) ? int(value) + ' bytes' : ''; }
/** A limit: in MiB when it is a whole number of MiB, with its decimal size beside it. */
export function limitText(value) {
  if (!isNum(value)) return 'the limit';
  if (value >= MIB && value % MIB === 0) return int(value / MIB) + ' MiB (' + bytes(value) + ')';
  if (value === ANDROID_LIMIT) return '1 MB (1,000,000 bytes)';
  return bytes(value) + ' (' + int(value) + ' bytes)';
}
export function ms(value) { return int(value) + ' ms'; }
export function seconds(value) {
  if (!isNum(value)) return '';
  if (value < 60) return (value < 10 ? value.toFixed(1) : int(value)) + ' s';
  const minutes = Math.floor(value / 60);
  return minutes + ' min ' + Math.round(value - minutes * 60) + ' s';
}
export function deadlineText(value) {
  if (!isNum(value)) return 'the deadline';
  return value % 1000 === 0 ? int(value / 1000) + ' s' : ms(value);
}
export function plural(count, one, many) { return int(count) + ' ' + (count === 1 ? one : (many || one + 's')); }

export function baseMime(mime) { return typeof mime === 'string' ? mime.split(';')[0].trim().toLowerCase() : ''; }
export function formatName(mime) {
  const known = FORMATS[baseMime(mime)];
  if (known) return known[0];
  return mime ? String(mime) : 'file of unknown type';
}
export function formatArticle(mime) {
  const known = FORMATS[baseMime(mime)];
  if (known) return known[1];
  return /^[aeiou]/i.test(str(mime)) ? 'an' : 'a';
}
export function numberArticle(number) {
  const text = String(number);
  return /^8/.test(text) || /^1[18](\d\d|\d{3})?$/.test(text) ? 'An' : 'A';
}
export function kindWord(descriptor) {
  const kind = str(descriptor.kind);
  if (kind) return kind;
  const mime = baseMime(descriptor.mimeType);
  if (mime.startsWith('image/')) return 'image';
  if (mime.startsWith('audio/')) return 'audio file';
  if (mime.startsWith('video/')) return 'video';
  return 'file';
}
export function dimensions(width, height) { return isNum(width) && isNum(height) ? Math.round(width) + '×' + Math.round(height) : ''; }
