/* The inspector's waterfall: where an attachment's time went. */
import { SEGMENT_LABELS } from './inspector-constants.js';
import { isObj, isNum, ms, deadlineText } from './inspector-format.js';
import { el } from './inspector-dom.js';

// ---------------------------------------------------------------------------------------
// Where the time went

export function timingSegments(timings) {
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

export function chooseScale(maxEnd, deadline) {
  if (isNum(deadline) && deadline > 0 && maxEnd >= deadline * 0.25) {
    return { scale: Math.max(deadline, maxEnd), deadlineShown: true };
  }
  return { scale: niceCeiling(Math.max(maxEnd, 1) * 1.05), deadlineShown: false };
}

function percent(value, scale) { return Math.max(0, Math.min(100, (value / scale) * 100)); }

export function waterfall(descriptor, scale, deadline) {
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
