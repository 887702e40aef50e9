/* The inspector's images: the published URL, the report's data, or GET /v1/files/<bucket>/<batch>/<name>. */
import { FILE_FETCHES_AT_ONCE } from './inspector-constants.js';
import { state } from './inspector-state.js';
import { str, isObj, isHttpURL } from './inspector-format.js';
import { el } from './inspector-dom.js';
import { authHeaders } from './inspector-api.js';

// ---------------------------------------------------------------------------------------
// Images: published URL, the report's data, or GET /v1/files/<bucket>/<batch>/<name>

function filesURL(path) {
  const parts = str(path).split('/').filter(Boolean).slice(-3);
  return '/v1/files/' + parts.map(encodeURIComponent).join('/');
}

export function typeFromName(path) {
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
export function image(className, alt, file, publishedUrl) {
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
