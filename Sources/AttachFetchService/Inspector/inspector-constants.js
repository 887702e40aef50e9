/* The inspector's constants: what docs/descriptor.md and docs/media.md define. */

// ---------------------------------------------------------------------------------------
// Constants: the contract in docs/descriptor.md and docs/media.md

export const TOKEN_KEY = 'attach-fetch-token';
export const MIB = 1048576;
export const IOS_LIMITS = { image: 10 * MIB, audio: 5 * MIB, video: 50 * MIB };
export const ANDROID_LIMIT = 1000000;
export const ANDROID_STILL_TYPES = ['image/jpeg', 'image/png', 'image/bmp'];
export const CONVERTIBLE_IMAGES = ['image/webp', 'image/heic', 'image/heif', 'image/avif'];
export const FILE_FETCHES_AT_ONCE = 4;
export const OPTION_CLIP = 'UNNotificationAttachmentOptionsThumbnailClippingRectKey';
export const OPTION_TIME = 'UNNotificationAttachmentOptionsThumbnailTimeKey';
export const OPTION_HIDDEN = 'UNNotificationAttachmentOptionsThumbnailHiddenKey';

// MIME type → [name, article].
export const FORMATS = {
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

export const HTTP_STATUS_TEXT = {
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

export const STATUS_MARK = { ready: '✓', rejected: '⊘', failed: '✕', timedOut: '⏱' };

// Waterfall segments: key → label (the legend says these words; colour is never needed).
export const SEGMENT_LABELS = {
  queued: 'queued', connect: 'connect', firstByte: 'first byte', download: 'download',
  normalize: 'convert', probe: 'probe', thumbnail: 'thumbnail', variants: 'variants',
  other: 'other', cached: 'total (no breakdown)',
};
