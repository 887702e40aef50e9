/*
 * attach-fetch inspector: "why doesn't my image show?"
 *
 * Plain ES2020 modules, no framework, no build step, nothing from another origin. This entry
 * module finds the page's elements and starts one mode; the inspector-*.js modules it imports
 * hold the rest, one concern each. The CLI's report inlines all of them as one classic script
 * (InspectorPage.reportScript), so a module's import lines and export keywords are its only
 * boundary: no top-level name is declared in two modules. Runs in two modes:
 * - service mode (served by `attach-fetch serve` at /): calls POST /v1/attachments or
 *   POST /v1/payloads on the same origin and fetches batch files from GET /v1/files/...;
 * - report mode (the CLI's --format html): the page holds the result in
 *   <script type="application/json" id="report-data">; nothing is fetched.
 *
 * Every text that comes from the payload or the server is put in with textContent or text
 * nodes, never parsed as markup (no HTML string is ever assigned to an element).
 */
import { ui } from './inspector-state.js';
import { startService } from './inspector-service.js';
import { startReport } from './inspector-report.js';

function start() {
  Object.assign(ui, {
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
  });
  const dataElement = document.getElementById('report-data');
  if (dataElement) startReport(dataElement);
  else startService();
}

// In the report the script is inline in <head>: wait for the document.
if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', start);
else start();
