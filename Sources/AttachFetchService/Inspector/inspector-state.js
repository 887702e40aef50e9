/* The inspector's shared state, the page's elements (filled in by inspector.js) and the status line. */

// ---------------------------------------------------------------------------------------
// State

export const state = {
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

/** The page's elements, filled in by inspector.js when the document is ready. */
export const ui = {};

export function say(text, tone) {
  ui.message.textContent = text;
  ui.message.className = 'message' + (tone ? ' message-' + tone : '');
}
