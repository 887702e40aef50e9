/* The inspector in report mode (the CLI's --format html): the result embedded in the page. */
import { say, state, ui } from './inspector-state.js';
import { isObj } from './inspector-format.js';
import { renderResult } from './inspector-result.js';

// ---------------------------------------------------------------------------------------
// Start

export function startReport(dataElement) {
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
