/* The inspector's verdict in words: what happened to an attachment and what to do about it. */
import { HTTP_STATUS_TEXT, CONVERTIBLE_IMAGES, IOS_LIMITS } from './inspector-constants.js';
import {
  str, stripStop, baseMime, formatName, formatArticle, limitText, bytes, isNum, deadlineText, isObj, hostOf,
  dimensions, sentence, seconds, numberArticle, cap, kindWord,
} from './inspector-format.js';

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
export function reasonSentence(descriptor, context) {
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
    case 'publishFailed':
      return 'The file was ready but could not be published (' + message + '): the object store refused it or could not be reached. This is a problem of the service\'s storage, not of the media: tell whoever runs it.';
    case 'encryptionUnavailable':
      return 'Encrypted publishing was asked for, but the service has no media key (' + message + '), so nothing was fetched. Ask without encryption, or have the service configured with a key.';
    default:
      return (message ? sentence(message) : 'The attachment is ' + str(descriptor.status) + ' without a reason.') +
        (codeName ? ' (This page does not know the reason code ' + codeName + ' yet: the service\'s message is shown as it is.)' : '');
  }
}

/** "A 640×480 JPEG of 40 KB is delivered." */
export function deliveredSentence(descriptor) {
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
export function transformSentences(descriptor) {
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
  if (transforms.indexOf('transcoded') >= 0 && (descriptor.sourceAudioCodec || descriptor.sourceVideoCodec)) {
    const from = [descriptor.sourceVideoCodec ? descriptor.sourceVideoCodec + ' video' : '', descriptor.sourceAudioCodec ? descriptor.sourceAudioCodec + ' audio' : ''].filter(Boolean).join(' and ');
    const to = [descriptor.sourceVideoCodec ? 'H.264' : '', descriptor.sourceAudioCodec ? 'AAC' : ''].filter(Boolean).join(' and ');
    out.push('The original is ' + (source || 'unknown type') + ' with ' + from + ', which iOS does not play: it was re-encoded to ' + to + ' in ' +
      formatName(delivered) + ' (' + delivered + '), ' + bytes(sourceBytes) + ' → ' + bytes(descriptor.bytes) + '.');
    const byDeadline = Array.isArray(descriptor.skippedAtDeadline) && descriptor.skippedAtDeadline.indexOf('transcode') >= 0;
    if (transforms.indexOf('trimmed') >= 0 && byDeadline) {
      out.push('The deadline came before all of it was re-encoded: the first ' + (isNum(descriptor.duration) ? descriptor.duration.toFixed(1) + ' s are' : 'part is') + ' delivered.');
    } else if (transforms.indexOf('trimmed') >= 0) {
      out.push('It was longer than fits the ' + limitText(limit) + ' limit: the first ' + (isNum(descriptor.duration) ? descriptor.duration.toFixed(1) + ' s are' : 'part is') + ' delivered.');
    }
    if (transforms.indexOf('partial') >= 0) {
      out.push('The original is damaged: it was re-encoded from what could be decoded' +
        (typeof descriptor.sourceDamage === 'string' && descriptor.sourceDamage ? ' (' + descriptor.sourceDamage + ')' : '') + '.');
    }
  } else if (transforms.indexOf('transcoded') >= 0) {
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
  if (transforms.indexOf('oriented') >= 0) {
    out.push('Its EXIF blocks stated different orientations, which devices read differently: its pixels were turned as the first says, and no tag is left.');
  }
  for (const other of transforms) {
    if (['remuxed', 'transcoded', 'reencoded', 'downscaled', 'trimmed', 'oriented'].indexOf(other) < 0) out.push('Also done to it: ' + other + '.');
  }
  return out;
}

export const SKIPPED_TEXT = {
  thumbnail: 'The deadline came before the thumbnail was made: it is delivered without one, and without the full decode that catches a damaged image.',
  probe: 'The deadline came before the file was probed: it is delivered as sniffed, with no duration, codecs or poster frame.',
  variants: 'The deadline came before the platform variants were made: the Android copy is missing.',
  transcode: 'The deadline came before the whole clip was re-encoded: its first seconds are delivered, and the result is not cached, so a call with more time gets all of it.',
};
