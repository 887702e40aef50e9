/* The inspector's section for a payload's lint findings. */
import { isObj, plural, str, sentence } from './inspector-format.js';
import { el, code } from './inspector-dom.js';

// ---------------------------------------------------------------------------------------
// Lint, the rewritten payload, the whole result

export function lintSection(lint, groups) {
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
