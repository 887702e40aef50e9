/*
 * attach-fetch inspector: "why doesn't my image show?"
 *
 * Plain ES2020, no framework, no build step, nothing from another origin. Runs in two modes:
 * - service mode (served by `attach-fetch serve` at /): calls POST /v1/attachments or
 *   POST /v1/payloads on the same origin and fetches batch files from GET /v1/files/...;
 * - report mode (the CLI's --format html): the page holds the result in
 *   <script type="application/json" id="report-data">; nothing is fetched.
 *
 * Every text that comes from the payload or the server is put in with textContent or text
 * nodes, never parsed as markup (no HTML string is ever assigned to an element).
 */
(function () {
  'use strict';

  // ---------------------------------------------------------------------------------------
  // Constants: the contract in docs/descriptor.md and docs/media.md

  const TOKEN_KEY = 'attach-fetch-token';
  const MIB = 1048576;
  const IOS_LIMITS = { image: 10 * MIB, audio: 5 * MIB, video: 50 * MIB };
  const ANDROID_LIMIT = 1000000;
  const ANDROID_STILL_TYPES = ['image/jpeg', 'image/png', 'image/bmp'];
  const CONVERTIBLE_IMAGES = ['image/webp', 'image/heic', 'image/heif', 'image/avif'];
  const FILE_FETCHES_AT_ONCE = 4;
  const OPTION_CLIP = 'UNNotificationAttachmentOptionsThumbnailClippingRectKey';
  const OPTION_TIME = 'UNNotificationAttachmentOptionsThumbnailTimeKey';
  const OPTION_HIDDEN = 'UNNotificationAttachmentOptionsThumbnailHiddenKey';

  // MIME type → [name, article].
  const FORMATS = {
    'image/jpeg': ['JPEG', 'a'], 'image/png': ['PNG', 'a'], 'image/gif': ['GIF', 'a'],
    'image/webp': ['WebP', 'a'], 'image/heic': ['HEIC', 'a'], 'image/heif': ['HEIF', 'a'],
    'image/avif': ['AVIF', 'an'], 'image/bmp': ['BMP', 'a'], 'image/x-ms-bmp': ['BMP', 'a'],
    'image/tiff': ['TIFF', 'a'], 'image/svg+xml': ['SVG image', 'an'], 'image/jp2': ['JPEG 2000', 'a'],
    'image/vnd.adobe.photoshop': ['Photoshop file', 'a'], 'image/x-icon': ['icon file', 'an'],
    'image/vnd.microsoft.icon': ['icon file', 'an'], 'image/x-tga': ['TGA', 'a'],
    'audio/mpeg': ['MP3', 'an'], 'audio/mp4': ['M4A', 'an'], 'audio/x-m4a': ['M4A', 'an'],
    'audio/wav': ['WAV', 'a'], 'audio/x-wav': ['WAV', 'a'], 'audio/aiff': ['AIFF', 'an'],
    'audio/x-aiff': ['AIFF', 'an'], 'audio/flac': ['FLAC', 'a'], 'audio/ogg': ['Ogg', 'an'],
    'audio/aac': ['AAC', 'an'], 'audio/x-ms-wma': ['WMA', 'a'], 'audio/opus': ['Opus', 'an'],
    'video/mp4': ['MP4', 'an'], 'video/x-m4v': ['M4V', 'an'], 'video/mpeg': ['MPEG', 'an'],
    'video/x-msvideo': ['AVI', 'an'], 'video/quicktime': ['QuickTime movie', 'a'],
    'video/3gpp': ['3GPP', 'a'], 'video/3gpp2': ['3GPP2', 'a'], 'video/mp2t': ['MPEG transport stream', 'an'],
    'video/webm': ['WebM', 'a'], 'video/x-matroska': ['Matroska (MKV)', 'a'], 'video/x-flv': ['Flash video (FLV)', 'a'],
    'video/x-ms-wmv': ['WMV', 'a'], 'video/x-ms-asf': ['ASF', 'an'],
    'text/html': ['HTML page', 'an'], 'application/xhtml+xml': ['XHTML page', 'an'],
    'application/pdf': ['PDF document', 'a'], 'application/json': ['JSON document', 'a'],
    'text/plain': ['plain-text file', 'a'], 'application/xml': ['XML document', 'an'], 'text/xml': ['XML document', 'an'],
    'application/zip': ['ZIP archive', 'a'], 'application/gzip': ['gzip archive', 'a'],
    'application/octet-stream': ['unrecognised binary file', 'an'],
  };

  const HTTP_STATUS_TEXT = {
    300: 'Multiple Choices', 301: 'Moved Permanently', 302: 'Found', 303: 'See Other', 304: 'Not Modified',
    307: 'Temporary Redirect', 308: 'Permanent Redirect',
    400: 'Bad Request', 401: 'Unauthorized', 402: 'Payment Required', 403: 'Forbidden', 404: 'Not Found',
    405: 'Method Not Allowed', 406: 'Not Acceptable', 407: 'Proxy Authentication Required', 408: 'Request Timeout',
    409: 'Conflict', 410: 'Gone', 411: 'Length Required', 412: 'Precondition Failed', 413: 'Content Too Large',
    414: 'URI Too Long', 415: 'Unsupported Media Type', 416: 'Range Not Satisfiable', 418: "I'm a teapot",
    421: 'Misdirected Request', 422: 'Unprocessable Content', 425: 'Too Early', 426: 'Upgrade Required',
    428: 'Precondition Required', 429: 'Too Many Requests', 431: 'Request Header Fields Too Large',
    451: 'Unavailable For Legal Reasons', 500: 'Internal Server Error', 501: 'Not Implemented', 502: 'Bad Gateway',
    503: 'Service Unavailable', 504: 'Gateway Timeout', 505: 'HTTP Version Not Supported', 507: 'Insufficient Storage',
    508: 'Loop Detected', 511: 'Network Authentication Required',
  };

  const STATUS_MARK = { ready: '✓', rejected: '⊘', failed: '✕', timedOut: '⏱' };

  // Waterfall segments: key → label (the legend says these words; colour is never needed).
  const SEGMENT_LABELS = {
    queued: 'queued', connect: 'connect', firstByte: 'first byte', download: 'download',
    normalize: 'convert', probe: 'probe', thumbnail: 'thumbnail', variants: 'variants',
    other: 'other', cached: 'total (no breakdown)',
  };

  // ---------------------------------------------------------------------------------------
  // State

  const state = {
    report: null,          // the report-data object in report mode
    last: null,            // the last inspection asked for: {kind, url} or {kind, text, payload}
    lastEdited: 'url',     // the input field the person typed in last
    controller: null,      // AbortController of the request under way
    publishes: null,       // whether the service publishes (so ?rewrite=true works); null = unknown
    fileCache: new Map(),  // server path → Promise of a data: URL
    fileQueue: [],
    fileActive: 0,
    runId: 0,
  };

  let ui = {};

  // ---------------------------------------------------------------------------------------
  // Small helpers

  function isObj(value) { return value !== null && typeof value === 'object' && !Array.isArray(value); }
  function isNum(value) { return typeof value === 'number' && Number.isFinite(value); }
  function str(value) { return typeof value === 'string' ? value : ''; }
  function nonEmpty(value) { return typeof value === 'string' && value.trim() !== '' ? value : null; }
  function dig(object, ...keys) {
    let current = object;
    for (const key of keys) {
      if (!isObj(current)) return undefined;
      current = current[key];
    }
    return current;
  }
  /** Capitalises a first word like "the", never a name like "iOS". */
  function cap(text) { return text && /^[a-z](?![A-Z])/.test(text) ? text.charAt(0).toUpperCase() + text.slice(1) : text; }
  function sentence(text) {
    const trimmed = str(text).trim();
    if (!trimmed) return '';
    return /[.!?…]$/.test(trimmed) ? cap(trimmed) : cap(trimmed) + '.';
  }
  function stripStop(text) { return str(text).trim().replace(/[.]+$/, ''); }

  /** Builds an element: props are attributes (class, text, hidden, for and plain attributes). */
  function el(tag, props, ...children) {
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
  function code(text, className) { return el('code', { class: className }, String(text)); }
  function clear(node) { while (node.firstChild) node.removeChild(node.firstChild); }
  function isHttpURL(text) { return typeof text === 'string' && /^https?:\/\//i.test(text); }
  function link(href, text) {
    // Only http(s) addresses become links; anything else stays text.
    if (!isHttpURL(href)) return el('span', { class: 'url-text' }, text || href);
    return el('a', { class: 'url-text', href, rel: 'noopener noreferrer nofollow', target: '_blank' }, text || href);
  }
  function hostOf(url) {
    try {
      return new URL(url).hostname.replace(/^\[|\]$/g, '') || null;
    } catch (error) {
      return null;
    }
  }
  function baseName(url) {
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
  function int(value) { return numberFormat.format(Math.round(value)); }
  /** Decimal units throughout (1 KB = 1,000 bytes, 1 MB = 1,000,000 bytes), as the footer says. */
  function bytes(value) {
    if (!isNum(value)) return 'an unknown size';
    if (value < 1000) return int(value) + (value === 1 ? ' byte' : ' bytes');
    if (value < 999500) {
      const kb = value / 1000;
      return (kb < 10 ? kb.toFixed(1) : int(kb)) + ' KB';
    }
    if (value < 1e9) return (value / 1e6).toFixed(1) + ' MB';
    return (value / 1e9).toFixed(2) + ' GB';
  }
  function exactBytes(value) { return isNum(value) ? int(value) + ' bytes' : ''; }
  /** A limit: in MiB when it is a whole number of MiB, with its decimal size beside it. */
  function limitText(value) {
    if (!isNum(value)) return 'the limit';
    if (value >= MIB && value % MIB === 0) return int(value / MIB) + ' MiB (' + bytes(value) + ')';
    if (value === ANDROID_LIMIT) return '1 MB (1,000,000 bytes)';
    return bytes(value) + ' (' + int(value) + ' bytes)';
  }
  function ms(value) { return int(value) + ' ms'; }
  function seconds(value) {
    if (!isNum(value)) return '';
    if (value < 60) return (value < 10 ? value.toFixed(1) : int(value)) + ' s';
    const minutes = Math.floor(value / 60);
    return minutes + ' min ' + Math.round(value - minutes * 60) + ' s';
  }
  function deadlineText(value) {
    if (!isNum(value)) return 'the deadline';
    return value % 1000 === 0 ? int(value / 1000) + ' s' : ms(value);
  }
  function plural(count, one, many) { return int(count) + ' ' + (count === 1 ? one : (many || one + 's')); }

  function baseMime(mime) { return typeof mime === 'string' ? mime.split(';')[0].trim().toLowerCase() : ''; }
  function formatName(mime) {
    const known = FORMATS[baseMime(mime)];
    if (known) return known[0];
    return mime ? String(mime) : 'file of unknown type';
  }
  function formatArticle(mime) {
    const known = FORMATS[baseMime(mime)];
    if (known) return known[1];
    return /^[aeiou]/i.test(str(mime)) ? 'an' : 'a';
  }
  function numberArticle(number) {
    const text = String(number);
    return /^8/.test(text) || /^1[18](\d\d|\d{3})?$/.test(text) ? 'An' : 'A';
  }
  function kindWord(descriptor) {
    const kind = str(descriptor.kind);
    if (kind) return kind;
    const mime = baseMime(descriptor.mimeType);
    if (mime.startsWith('image/')) return 'image';
    if (mime.startsWith('audio/')) return 'audio file';
    if (mime.startsWith('video/')) return 'video';
    return 'file';
  }
  function dimensions(width, height) { return isNum(width) && isNum(height) ? Math.round(width) + '×' + Math.round(height) : ''; }

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

  function payloadText(rawDocument, path, value) {
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
  function notificationTexts(payload) {
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
  function keyPlatforms(path) {
    if (typeof path !== 'string') return null;
    if (/^(message\.)?(notification|data)\.image$/.test(path)) return ['ios', 'android'];
    if (path === 'message.android.notification.image' || path === 'big_picture') return ['android'];
    return ['ios'];
  }

  /** Whether this result checked Android (so a missing `variants` entry means "fits as is"). */
  function androidChecked(result, kind) {
    const listed = Array.isArray(result.platforms) ? result.platforms : null;
    if (listed) return listed.indexOf('android') >= 0;
    const descriptors = Array.isArray(result.attachments) ? result.attachments : [];
    if (descriptors.some((d) => isObj(d.variants) || (Array.isArray(d.platforms) && d.platforms.indexOf('android') >= 0))) return true;
    if (kind === 'payload' && descriptors.some((d) => (keyPlatforms(d.payloadPath) || []).indexOf('android') >= 0)) return true;
    return false;
  }

  // ---------------------------------------------------------------------------------------
  // The verdict in words

  function httpStatusSentence(descriptor) {
    const message = str(descriptor.reason && descriptor.reason.message);
    const match = /\b([1-5]\d\d)\b/.exec(message);
    if (!match) return 'The server did not answer with the file: ' + stripStop(message) + '. Check the URL.';
    const status = Number(match[1]);
    const name = HTTP_STATUS_TEXT[status] ? ' ' + HTTP_STATUS_TEXT[status] : '';
    const start = 'The server answered HTTP ' + status + name;
    if (status === 404 || status === 410) return start + ': check the URL, or that the file is still on the server.';
    if (status === 401 || status === 403 || status === 407) {
      return start + ': it will not hand out the file. Push media must be readable by anyone with the URL: a signed URL may have expired, or the server or CDN blocks this network.';
    }
    if (status === 429) return start + ': the server is rate-limiting. Serve push media from a CDN that takes a burst of devices at once.';
    if (status >= 500) return start + ': the server failed. Check the origin or CDN: devices fetching the file now fail too.';
    if (status >= 300 && status < 400) return start + ' without a usable redirect: link to the file itself.';
    return start + ': the server refused the request. Check the URL.';
  }

  function unsupportedTypeSentence(descriptor) {
    const mime = baseMime(descriptor.mimeType);
    const message = stripStop(descriptor.reason && descriptor.reason.message);
    const named = mime ? formatName(mime) + ' (' + mime + ')' : 'a type nobody could name';
    if (mime === 'text/html' || mime === 'application/xhtml+xml') {
      return 'The URL returned an HTML page (' + mime + '), not an image: often an error or login page served with status 200. Link to the media file itself, and check that it is public.';
    }
    if (mime === 'application/json' || mime === 'text/xml' || mime === 'application/xml') {
      return 'The URL returned ' + formatArticle(mime) + ' ' + named + ', not media: often an API error served with status 200. Link to the media file itself.';
    }
    if (mime.startsWith('text/')) return 'The URL returned text (' + mime + '), not media. Link to the media file itself.';
    if (mime === 'application/pdf') return 'The URL returned a PDF document (application/pdf): a notification attaches only images, sound and video. Convert the page to JPEG or PNG.';
    if (CONVERTIBLE_IMAGES.indexOf(mime) >= 0) {
      return 'The image is ' + named + ', which iOS does not show, and this service does not convert (--no-normalize): send JPEG, PNG or GIF, or turn converting on.';
    }
    if (mime.startsWith('image/')) return 'The image is ' + named + ', which iOS does not take as an attachment: convert it to JPEG, PNG or GIF.';
    if (mime.startsWith('video/')) {
      return 'The video cannot be delivered as iOS plays it (' + message + '). Encode it as H.264 (or HEVC) video with AAC sound in MP4.';
    }
    if (mime.startsWith('audio/')) {
      return 'The sound cannot be delivered as iOS plays it (' + message + '). Send MP3, AAC in M4A, WAV or AIFF.';
    }
    if (!mime || mime === 'application/octet-stream') {
      return 'The bytes are not an image, sound or video anyone recognises (' + message + '). Check that the URL serves the media file itself.';
    }
    return 'The URL returned ' + formatArticle(mime) + ' ' + named + ', not an image, sound or video iOS takes (' + message + ').';
  }

  function sizeLimitSentence(descriptor) {
    const message = str(descriptor.reason && descriptor.reason.message);
    const limitMatch = /limit of (\d+) bytes/.exec(message);
    const limit = limitMatch ? Number(limitMatch[1]) : IOS_LIMITS[descriptor.kind];
    const nameMatch = /the (image source|MPEG-4|image|audio|video) limit of/.exec(message);
    const limitName = nameMatch ? nameMatch[1] : (descriptor.kind || '');
    const declared = /Content-Length (\d+)/.exec(message);
    const attempts = /could not be brought under (\d+) bytes in (\d+) attempts/.exec(message);
    if (attempts) {
      return 'The image could not be shrunk under ' + limitText(Number(attempts[1])) + ' in ' + attempts[2] +
        ' attempts. Send a smaller image: fewer pixels, or a JPEG instead of a PNG.';
    }
    let size = '';
    if (declared) size = 'The server announces ' + bytes(Number(declared[1])) + ' (Content-Length)';
    else if (isNum(descriptor.sourceBytes)) size = 'The file is ' + bytes(descriptor.sourceBytes);
    else if (isNum(descriptor.bytes)) size = 'The file is ' + bytes(descriptor.bytes);
    else if (/grew past/.test(message)) size = 'The download grew past the limit';
    else size = 'The file is larger than allowed';
    let allowed;
    if (/largest limit/.test(message)) allowed = 'more than the largest attachment of any kind: ' + limitText(limit);
    else if (limitName === 'image source') allowed = 'images to convert may be at most ' + limitText(limit) + ', and iOS itself takes at most 10 MiB';
    else if (limitName === 'MPEG-4') allowed = 'an MPEG-4 ' + (descriptor.kind || 'file') + ' may be at most ' + limitText(limit);
    else if (limitName) allowed = 'iOS takes ' + limitName + ' attachments of at most ' + limitText(limit);
    else allowed = 'the limit is ' + limitText(limit);
    const advice = descriptor.kind === 'video' ? 'shorten it or lower its bitrate'
      : descriptor.kind === 'audio' ? 'shorten it or lower its bitrate'
        : 'scale it down or compress it';
    return size + '; ' + allowed + '. Make it smaller: ' + advice + '.';
  }

  function deadlineSentence(descriptor, context) {
    const message = str(descriptor.reason && descriptor.reason.message);
    const deadline = deadlineText(context.deadlineMs);
    if (/queued/.test(message)) {
      return 'The batch deadline (' + deadline + ') passed while this request was still waiting for a free download slot: too many attachments at once, or the others were slow.';
    }
    if (/before the request could start/.test(message)) return 'The batch deadline (' + deadline + ') passed before the request could start.';
    if (/converted/.test(message)) return 'The batch deadline (' + deadline + ') passed while the image was being converted to fit: send it already as a JPEG, PNG or GIF within 10 MiB.';
    if (/MPEG-4/.test(message)) return 'The batch deadline (' + deadline + ') passed while the video was being moved into MPEG-4: send MP4.';
    return 'The batch deadline (' + deadline + ') came before this attachment was finished: the file is too slow to download or too big. Serve it from a fast CDN, or make it smaller.';
  }

  /** The reason as a sentence a person understands, with what to do about it. */
  function reasonSentence(descriptor, context) {
    const reason = isObj(descriptor.reason) ? descriptor.reason : {};
    const codeName = str(reason.code);
    const message = stripStop(reason.message);
    const host = hostOf(descriptor.finalUrl || descriptor.url) || 'the server';
    switch (codeName) {
      case 'httpStatus': return httpStatusSentence(descriptor);
      case 'unsupportedType': return unsupportedTypeSentence(descriptor);
      case 'sizeLimitExceeded': return sizeLimitSentence(descriptor);
      case 'timeout':
        return 'The server was too slow and the request timed out (' + message + '). Devices give a notification about 30 s in all: serve the file from a fast CDN, or make it smaller.';
      case 'deadlineExceeded': return deadlineSentence(descriptor, context);
      case 'connectFailed':
        return 'No connection could be made to ' + host + ' (' + message + '). Check the host name (DNS) and that the server accepts connections from the internet.';
      case 'tlsFailed':
        return 'The secure connection to ' + host + ' failed (' + message + '). iOS refuses it too: fix the server\'s certificate or TLS set-up (a trusted CA, the right host name, not expired, TLS 1.2 or newer).';
      case 'originUnavailable':
        return host + ' failed several times in a row just before this, so the service did not ask it again for now (' + message + '). Nothing was wrong with this file as far as anyone knows: the server is down or overloaded. Check its health; the service tries it again by itself after the cool-down.';
      case 'forbiddenAddress':
        return host + ' leads to an address the service will not connect to (' + message + '): loopback, private and link-local networks are refused so a push cannot reach internal systems. Put the media on a public server (an operator can allow one range with --allow-cidr).';
      case 'corruptMedia':
        return 'The file is damaged or cut short (' + message + '): a device would not show it, or show it grey. Upload the whole file again, and check the CDN\'s cached copy.';
      case 'emptyBody':
        return 'The server answered with success but sent no bytes (' + message + '): there is nothing to show. Check that the file on the server is not empty.';
      case 'pixelLimitExceeded': {
        const size = dimensions(descriptor.sourceWidth, descriptor.sourceHeight);
        return 'The image has too many pixels to decode safely' + (size ? ', ' + size : '') + ' (' + message + '). Scale it down: 2,000 pixels on the long edge is plenty for a notification.';
      }
      case 'tooManyRedirects':
        return 'The URL redirects too many times (more than 5) (' + message + '). Put the file\'s final address in the push.';
      case 'transferFailed':
        return 'The download broke off (' + message + '): the connection was reset or the body was shorter than announced. Try again, and check the server or CDN.';
      case 'decoderCrashed':
        return 'The decoder crashed on this file (' + message + '): the file is malformed, or too heavy to decode within the limits. Only this attachment failed; re-encode the file with an ordinary tool.';
      case 'unsupportedScheme': {
        const scheme = /^([a-z][a-z0-9+.-]*):/i.exec(str(descriptor.url));
        return 'Only http and https URLs are fetched' + (scheme ? ', and this one is ' + scheme[1].toLowerCase() + ':' : '') + ' (' + message + '). Put the media on a web server and use its https URL.';
      }
      case 'invalidURL':
        return 'This is not a usable URL (' + message + '). A media URL looks like https://cdn.example.com/push/image.jpg.';
      case 'cancelled':
        return 'The request was cancelled before it finished (' + message + '): the caller went away or the service is stopping. Inspect again.';
      case 'ioError':
        return 'The service could not write or read a file (' + message + '). This is a problem of the service, not of the media: tell whoever runs it.';
      case 'unsupportedOnPlatform':
        return sentence(message);
      default:
        return (message ? sentence(message) : 'The attachment is ' + str(descriptor.status) + ' without a reason.') +
          (codeName ? ' (This page does not know the reason code ' + codeName + ' yet: the service\'s message is shown as it is.)' : '');
    }
  }

  /** "A 640×480 JPEG of 40 KB is delivered." */
  function deliveredSentence(descriptor) {
    const mime = descriptor.mimeType;
    const format = formatName(mime);
    const noun = descriptor.kind === 'video' ? format + ' video' : descriptor.kind === 'audio' ? format + ' audio file' : format;
    const extras = [];
    if (descriptor.videoCodec) extras.push(String(descriptor.videoCodec));
    if (descriptor.audioCodec) extras.push(String(descriptor.audioCodec));
    if (isNum(descriptor.duration)) extras.push(seconds(descriptor.duration));
    const size = dimensions(descriptor.width, descriptor.height);
    const subject = size ? numberArticle(descriptor.width) + ' ' + size + ' ' + noun : cap(formatArticle(mime)) + ' ' + noun;
    const asDownloaded = Array.isArray(descriptor.transforms) && descriptor.transforms.length === 0 ? ' as downloaded' : '';
    return subject + (extras.length ? ' (' + extras.join(', ') + ')' : '') + ' of ' + bytes(descriptor.bytes) + ' is delivered' + asDownloaded + '.';
  }

  /** What was done to the original, in words. */
  function transformSentences(descriptor) {
    const transforms = Array.isArray(descriptor.transforms) ? descriptor.transforms.map(String) : [];
    const out = [];
    const source = baseMime(descriptor.sourceMimeType);
    const delivered = baseMime(descriptor.mimeType);
    const sourceBytes = descriptor.sourceBytes;
    const limit = IOS_LIMITS[descriptor.kind];
    const over = isNum(sourceBytes) && isNum(limit) && sourceBytes > limit;
    const fromSize = dimensions(descriptor.sourceWidth, descriptor.sourceHeight);
    const toSize = dimensions(descriptor.width, descriptor.height);
    let scaled = '';
    if (transforms.indexOf('downscaled') >= 0) {
      scaled = fromSize && toSize && fromSize !== toSize ? ' and downscaled from ' + fromSize + ' to ' + toSize : ' and downscaled';
    }
    const overText = over ? 'The ' + kindWord(descriptor) + ' is ' + bytes(sourceBytes) + '; iOS accepts at most ' + limitText(limit) : '';
    if (transforms.indexOf('remuxed') >= 0) {
      out.push('The original is ' + formatArticle(source) + ' ' + formatName(source) + ' (' + (source || 'unknown type') +
        '), which iOS does not play as it is: its streams were copied, not re-encoded, into ' + formatName(delivered) + ' (' + delivered + ').');
    }
    if (transforms.indexOf('transcoded') >= 0) {
      const firstFrame = source === 'image/gif' && delivered === 'image/jpeg' ? ' (an animation keeps only its first frame)' : '';
      if (CONVERTIBLE_IMAGES.indexOf(source) >= 0) {
        out.push('The original is ' + formatName(source) + ' (' + source + '), which iOS does not show: it was converted to ' +
          formatName(delivered) + scaled + ', ' + bytes(sourceBytes) + ' → ' + bytes(descriptor.bytes) + firstFrame + '.');
      } else if (over) {
        out.push(overText + ': it was converted to ' + formatName(delivered) + scaled + ' of ' + bytes(descriptor.bytes) + firstFrame + '.');
      } else {
        out.push('The original ' + formatName(source) + ' was converted to ' + formatName(delivered) + scaled + ', ' +
          bytes(sourceBytes) + ' → ' + bytes(descriptor.bytes) + firstFrame + '.');
      }
    } else if (transforms.indexOf('reencoded') >= 0) {
      if (over) out.push(overText + ': it was re-encoded' + scaled + ' to ' + bytes(descriptor.bytes) + '.');
      else out.push('It was re-encoded' + scaled + ', ' + bytes(sourceBytes) + ' → ' + bytes(descriptor.bytes) + '.');
    } else if (transforms.indexOf('downscaled') >= 0) {
      out.push('It was downscaled' + (fromSize && toSize ? ' from ' + fromSize + ' to ' + toSize : '') + '.');
    }
    for (const other of transforms) {
      if (['remuxed', 'transcoded', 'reencoded', 'downscaled'].indexOf(other) < 0) out.push('Also done to it: ' + other + '.');
    }
    return out;
  }

  const SKIPPED_TEXT = {
    thumbnail: 'The deadline came before the thumbnail was made: it is delivered without one, and without the full decode that catches a damaged image.',
    probe: 'The deadline came before the file was probed: it is delivered as sniffed, with no duration, codecs or poster frame.',
    variants: 'The deadline came before the platform variants were made: the Android copy is missing.',
  };

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
  // Images: published URL, the report's data, or GET /v1/files/<bucket>/<batch>/<name>

  function filesURL(path) {
    const parts = str(path).split('/').filter(Boolean).slice(-3);
    return '/v1/files/' + parts.map(encodeURIComponent).join('/');
  }

  function typeFromName(path) {
    const lower = str(path).toLowerCase();
    if (/\.jpe?g$/.test(lower)) return 'image/jpeg';
    if (/\.png$/.test(lower)) return 'image/png';
    if (/\.gif$/.test(lower)) return 'image/gif';
    if (/\.bmp$/.test(lower)) return 'image/bmp';
    return 'image/jpeg';
  }

  function queueFileFetch(task) {
    return new Promise((resolve, reject) => {
      const run = () => {
        state.fileActive += 1;
        task().then(resolve, reject).finally(() => {
          state.fileActive -= 1;
          const next = state.fileQueue.shift();
          if (next) next();
        });
      };
      if (state.fileActive < FILE_FETCHES_AT_ONCE) run();
      else state.fileQueue.push(run);
    });
  }

  function readAsDataURL(blob) {
    return new Promise((resolve, reject) => {
      const reader = new FileReader();
      reader.addEventListener('load', () => resolve(reader.result));
      reader.addEventListener('error', () => reject(reader.error || new Error('the image could not be read')));
      reader.readAsDataURL(blob);
    });
  }

  async function fetchFileAsDataURL(path) {
    const response = await fetch(filesURL(path), { headers: authHeaders({}), credentials: 'omit', cache: 'no-store' });
    if (!response.ok) {
      const error = new Error(response.status === 401 ? 'the service wants a valid token for its files (401)'
        : 'the service answered HTTP ' + response.status + (response.status === 404 ? ' (the batch\'s files are kept only for the service\'s retention time)' : ''));
      error.status = response.status;
      throw error;
    }
    let blob = await response.blob();
    if (!/^image\//.test(blob.type)) blob = new Blob([blob], { type: typeFromName(path) });
    return readAsDataURL(blob);
  }

  /** A data: URL (or null) for a batch file, from the report or the service. */
  function fileImage(path) {
    if (!path) return Promise.resolve(null);
    if (state.report) {
      const images = isObj(state.report.images) ? state.report.images : {};
      return Promise.resolve(typeof images[path] === 'string' ? images[path] : null);
    }
    if (!state.fileCache.has(path)) state.fileCache.set(path, queueFileFetch(() => fetchFileAsDataURL(path)));
    return state.fileCache.get(path);
  }

  /** An <img> that gets its source as soon as it is known; a note replaces it if none comes. */
  function image(className, alt, file, publishedUrl) {
    const img = el('img', { class: className, alt, decoding: 'async' });
    const holder = el('span', { class: 'image-holder' }, img);
    const fail = (why) => {
      img.classList.add('image-failed');
      holder.appendChild(el('span', { class: 'image-note' }, 'Image not available: ' + why + '.'));
    };
    const fromFile = () => {
      if (!file) { fail('no file is named for it'); return; }
      if (state.report) {
        const images = isObj(state.report.images) ? state.report.images : {};
        if (typeof images[file] === 'string') img.src = images[file];
        else fail('the report does not hold it');
        return;
      }
      fileImage(file).then((source) => {
        if (source) img.src = source;
        else fail('the service sent nothing');
      }, (error) => fail(error && error.message ? error.message : 'it could not be loaded'));
    };
    if (isHttpURL(publishedUrl)) {
      const onError = () => {
        img.removeEventListener('error', onError);
        img.removeAttribute('src');
        fromFile();
      };
      img.addEventListener('error', onError);
      img.src = publishedUrl;
    } else {
      fromFile();
    }
    return holder;
  }

  // ---------------------------------------------------------------------------------------
  // Grouping: the same URL under several keys of a payload is one attachment

  function groupDescriptors(descriptors) {
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

  function groupPlatforms(group) {
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

  function iosPreview(group, texts, context) {
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
  function androidOutcome(descriptor, checked) {
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

  function androidPreview(group, texts, outcome) {
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

  function iosFacts(descriptor) {
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

  function androidFacts(descriptor, outcome, checked) {
    const rows = [];
    const variant = isObj(descriptor.variants) && isObj(descriptor.variants.android) ? descriptor.variants.android : null;
    if (outcome.shown && outcome.what === 'variant') {
      rows.push(['Shown', 'Yes: an Android variant was made, and Android shows it.']);
      rows.push(['Variant', formatName(variant.mimeType) + ' (', code(str(variant.mimeType) || 'unknown'), ')' +
        (dimensions(variant.width, variant.height) ? ', ' + dimensions(variant.width, variant.height) : '') + ', ' + bytes(variant.bytes) +
        (isNum(variant.bytes) ? ' (' + exactBytes(variant.bytes) + ')' : '')]);
      const transforms = Array.isArray(variant.transforms) ? variant.transforms : [];
      if (transforms.length) rows.push(['Done to it', transforms.map(String).join(', ')]);
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

  // ---------------------------------------------------------------------------------------
  // Where the time went

  function timingSegments(timings) {
    if (!isObj(timings)) return { segments: [], end: 0, total: 0, derivedQueue: false };
    const value = (key) => (isNum(timings[key]) && timings[key] >= 0 ? timings[key] : null);
    const total = value('total') || 0;
    const connect = value('connect');
    const firstByte = value('firstByte');
    const download = value('download');
    const hasTransfer = connect !== null || firstByte !== null || download !== null;
    const after = ['normalize', 'probe', 'thumbnail', 'variants'].map((key) => [key, value(key)]).filter((entry) => entry[1] !== null);
    const segments = [];
    let at = 0;
    const push = (key, duration, note) => {
      segments.push({ key, label: SEGMENT_LABELS[key] || key, ms: duration, start: at, note });
      at += duration;
    };
    if (!hasTransfer && after.length === 0 && value('queued') === null) {
      push('cached', total, 'a cached result has only its total');
      return { segments, end: total, total, derivedQueue: false };
    }
    // connect and first byte are measured from the start of the transfer, and download is the
    // whole transfer: they nest, so each segment is the part the previous one does not cover.
    const transfer = Math.max(download || 0, firstByte || 0, connect || 0);
    const afterSum = after.reduce((sum, entry) => sum + entry[1], 0);
    let queued = value('queued');
    let derivedQueue = false;
    if (queued === null) {
      queued = Math.max(0, total - transfer - afterSum);
      derivedQueue = true;
    }
    push('queued', queued, derivedQueue ? 'the total less the other steps' : null);
    if (hasTransfer) {
      if (connect !== null) push('connect', connect);
      if (firstByte !== null) push('firstByte', Math.max(0, firstByte - (connect || 0)), 'waiting for the server\'s first byte');
      if (download !== null) push('download', Math.max(0, transfer - Math.max(firstByte || 0, connect || 0)));
    }
    for (const [key, duration] of after) push(key, duration);
    const other = total - at;
    if (other > 0) push('other', other, 'between steps: admitting, checking, writing files');
    return { segments, end: Math.max(at, total), total, derivedQueue };
  }

  function niceCeiling(value) {
    if (value <= 0) return 1;
    const power = Math.pow(10, Math.floor(Math.log10(value)));
    for (const step of [1, 2, 2.5, 5, 10]) if (step * power >= value) return step * power;
    return 10 * power;
  }

  function chooseScale(maxEnd, deadline) {
    if (isNum(deadline) && deadline > 0 && maxEnd >= deadline * 0.25) {
      return { scale: Math.max(deadline, maxEnd), deadlineShown: true };
    }
    return { scale: niceCeiling(Math.max(maxEnd, 1) * 1.05), deadlineShown: false };
  }

  function percent(value, scale) { return Math.max(0, Math.min(100, (value / scale) * 100)); }

  function waterfall(descriptor, scale, deadline) {
    const timing = timingSegments(descriptor.timings);
    const box = el('section', { class: 'waterfall' }, el('h4', null, 'Where the time went'));
    if (timing.segments.length === 0) {
      box.appendChild(el('p', null, 'No timings in this result.'));
      return box;
    }
    const ratio = isNum(deadline) && deadline > 0 ? timing.total / deadline : null;
    const share = ratio === null ? '' : ' — ' + (ratio < 0.001 ? 'under 0.1' : (ratio * 100).toFixed(ratio < 0.1 ? 1 : 0)) + '% of the batch deadline of ' + ms(deadline);
    box.appendChild(el('p', { class: 'waterfall-total' }, 'Total ', el('strong', null, ms(timing.total)), share,
      isNum(deadline) && timing.total >= deadline ? ' (at or past the deadline)' : '', '.'));

    const track = el('div', { class: 'wf-track' });
    const numbered = timing.segments.filter((segment) => segment.ms > 0);
    numbered.forEach((segment, position) => {
      const bar = el('div', { class: 'wf-seg seg-' + segment.key, title: segment.label + ' ' + ms(segment.ms) });
      bar.style.left = percent(segment.start, scale.scale) + '%';
      bar.style.width = percent(segment.ms, scale.scale) + '%';
      if (segment.ms / scale.scale >= 0.045) bar.appendChild(el('span', { class: 'wf-num' }, String(position + 1)));
      track.appendChild(bar);
    });
    if (scale.deadlineShown) {
      const marker = el('div', { class: 'wf-deadline' }, el('span', { class: 'wf-deadline-label' }, 'deadline ' + deadlineText(deadline)));
      const at = percent(deadline, scale.scale);
      marker.style.left = at + '%';
      if (at > 60) marker.classList.add('wf-deadline-end');
      track.appendChild(marker);
    }
    const axis = el('div', { class: 'wf-axis' },
      el('span', null, '0'),
      el('span', null, scale.deadlineShown ? ms(scale.scale) : ms(scale.scale) + ' (zoomed)'));
    const chart = el('div', { class: scale.deadlineShown ? 'wf-chart wf-chart-marked' : 'wf-chart', 'aria-hidden': 'true' }, track, axis);
    if (!scale.deadlineShown && isNum(deadline)) {
      chart.appendChild(el('p', { class: 'wf-offscale' }, 'deadline ' + ms(deadline) + ' → far off this scale'));
    }
    box.appendChild(chart);

    const legend = el('ol', { class: 'wf-legend' });
    let number = 0;
    for (const segment of timing.segments) {
      const shown = segment.ms > 0;
      if (shown) number += 1;
      legend.appendChild(el('li', null,
        el('span', { class: 'wf-swatch seg-' + segment.key + (shown ? '' : ' wf-swatch-empty'), 'aria-hidden': 'true' }, shown ? String(number) : ''),
        el('span', { class: 'wf-label' }, segment.label), ' ',
        el('strong', null, ms(segment.ms)),
        segment.note ? el('span', { class: 'wf-note' }, ' (' + segment.note + ')') : null));
    }
    box.appendChild(legend);
    return box;
  }

  // ---------------------------------------------------------------------------------------
  // One attachment

  function statusBadge(status) {
    const word = str(status) || 'unknown';
    return el('p', { class: 'badge badge-' + word },
      el('span', { class: 'mark', 'aria-hidden': 'true' }, (STATUS_MARK[word] || '?') + ' '),
      el('span', { class: 'visually-hidden' }, 'Status: '),
      el('span', { class: 'status' }, word));
  }

  function card(group, position, context) {
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

  // ---------------------------------------------------------------------------------------
  // Lint, the rewritten payload, the whole result

  function lintSection(lint, groups) {
    const section = el('section', { class: 'lint-section', 'aria-labelledby': 'lint-heading' },
      el('h2', { id: 'lint-heading' }, 'Payload lint'));
    const findings = (Array.isArray(lint) ? lint : []).filter(isObj);
    const errors = findings.filter((finding) => finding.severity === 'error').length;
    const warnings = findings.length - errors;
    section.appendChild(el('p', { class: 'lint-summary' }, findings.length === 0
      ? 'No findings: nothing in the payload itself stops a device from showing its media.'
      : plural(errors, 'error') + ' and ' + plural(warnings, 'warning') + ' about the payload itself' +
        (errors ? ': an error means devices will not show the media, whatever the files.' : '.')));
    const list = el('ul', { id: 'lint', class: 'lint-list' });
    const rank = (finding) => (finding.severity === 'error' ? 0 : finding.severity === 'warning' ? 1 : 2);
    const sorted = findings.map((finding, index) => ({ finding, index }))
      .sort((a, b) => rank(a.finding) - rank(b.finding) || a.index - b.index);
    for (const { finding } of sorted) {
      const severity = str(finding.severity) || 'note';
      const path = str(finding.path);
      const target = path ? groups.findIndex((group) => group.members.some((member) => member.payloadPath === path)) : -1;
      list.appendChild(el('li', { class: 'lint-finding severity-' + severity },
        el('p', { class: 'lint-head' },
          el('span', { class: 'severity' }, severity), ' ',
          code(str(finding.code), 'lint-code'), ' at ',
          path ? code(path, 'lint-path') : el('span', { class: 'lint-path lint-path-whole' }, 'the whole payload'),
          target >= 0 ? ' — ' : '', target >= 0 ? el('a', { href: '#card-' + target }, 'see attachment ' + (target + 1)) : null),
        el('p', { class: 'lint-message' }, sentence(finding.message))));
    }
    section.appendChild(list);
    return section;
  }

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
  function renderResult(kind, result, payload, rawDocument, options) {
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

  // ---------------------------------------------------------------------------------------
  // Talking to the service

  function getToken() {
    try {
      return sessionStorage.getItem(TOKEN_KEY) || '';
    } catch (error) {
      return '';
    }
  }
  function setToken(value) {
    try {
      if (value) sessionStorage.setItem(TOKEN_KEY, value);
      else sessionStorage.removeItem(TOKEN_KEY);
    } catch (error) { /* storage refused: the token lives for this request only */ }
  }
  function authHeaders(headers) {
    const token = getToken();
    if (token) headers.Authorization = 'Bearer ' + token;
    return headers;
  }

  async function post(path, body, signal) {
    const headers = authHeaders({ 'Content-Type': 'application/json' });
    const sentToken = Boolean(headers.Authorization);
    const response = await fetch(path, { method: 'POST', headers, body, credentials: 'omit', cache: 'no-store', signal });
    const text = await response.text();
    let json = null;
    try {
      json = JSON.parse(text);
    } catch (error) { /* not JSON: reported below */ }
    return { status: response.status, ok: response.ok, json, text, sentToken };
  }

  function errorOf(answer) {
    const error = answer.json && isObj(answer.json.error) ? answer.json.error : {};
    return { code: str(error.code), message: str(error.message) };
  }

  /**
   * Whether the service publishes, read from this page's own Content-Security-Policy: its
   * img-src names the public base when there is one. Asking first spares a refused
   * ?rewrite=true request (and its console line) on a service that does not publish.
   */
  async function servicePublishes(signal) {
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

  function say(text, tone) {
    ui.message.textContent = text;
    ui.message.className = 'message' + (tone ? ' message-' + tone : '');
  }

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
      say('Done. ' + summary, 'done');
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

  // ---------------------------------------------------------------------------------------
  // Start

  function startReport(dataElement) {
    let data;
    try {
      data = JSON.parse(dataElement.textContent || '');
    } catch (error) {
      say('This report\'s data cannot be read: ' + error.message, 'error');
      return;
    }
    if (!isObj(data) || !isObj(data.result)) {
      say('This report holds no result.', 'error');
      return;
    }
    state.report = data;
    document.body.classList.add('report-mode');
    ui.inputSection.hidden = true;
    ui.tokenForm.hidden = true;
    document.title = 'attach-fetch report';
    ui.title.textContent = 'attach-fetch report';
    const kind = data.kind === 'payload' ? 'payload' : 'attachments';
    ui.tagline.textContent = kind === 'payload'
      ? 'The media of a push payload, fetched and checked as the devices would, with the payload\'s lint.'
      : 'Media URLs fetched and checked as the devices would, and shown as iOS and Android would show them.';
    if (typeof data.generated === 'string' && data.generated) {
      const when = new Date(data.generated);
      ui.generated.textContent = 'Generated ' + (isNaN(when.getTime()) ? data.generated : when.toUTCString().replace('GMT', 'UTC'));
      ui.generated.hidden = false;
    }
    const summary = renderResult(kind, data.result, isObj(data.payload) ? data.payload : null, dataElement.textContent,
      { copyLink: false, rawPath: ['result', 'payload'], showPayload: true });
    say('', null);
  }

  function startService() {
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

  function start() {
    ui = {
      form: document.getElementById('inspect-form'),
      url: document.getElementById('url'),
      payload: document.getElementById('payload'),
      tokenForm: document.getElementById('token-form'),
      tokenInput: document.getElementById('token'),
      message: document.getElementById('message'),
      results: document.getElementById('results'),
      inputSection: document.getElementById('input-section'),
      title: document.getElementById('page-title'),
      tagline: document.getElementById('tagline'),
      generated: document.getElementById('generated'),
    };
    const dataElement = document.getElementById('report-data');
    if (dataElement) startReport(dataElement);
    else startService();
  }

  // In the report the script is inline in <head>: wait for the document.
  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', start);
  else start();
}());
