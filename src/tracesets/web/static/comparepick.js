// "Compare with…" on a traceset's view: a baseline to compare it with, its own baseline
// (the one the service chose or the upload named) preselected, else one of the
// workspace's inspected tracesets of the same rank count, newest first.

import { call, query } from './api.js';
import { compareHash } from './compareview.js';
import { h } from './dom.js';

/** Tracesets the picker offers at most (one page of the list). */
export const CANDIDATES = 100;

/** The workspace's other inspected tracesets of the traceset's rank count, newest first. */
async function candidates(t) {
  const answer = await call(`/api/v1/tracesets${query({ rank_count: t.rankCountDerived, limit: CANDIDATES })}`);
  return answer.data.items.filter((item) => item.id !== t.id && item.inspection && item.inspection.status === 'done');
}

function label(item) {
  return `${item.name} (${item.createdAt.slice(0, 10)}, ${item.id.slice(0, 8)})`;
}

/** The section, or null while the traceset is not inspected (nothing to compare yet). */
export function compareSection(t) {
  if (!t.inspection || t.inspection.status !== 'done') return null;
  const select = h('select', { id: 'baseline', name: 'baseline', 'aria-describedby': 'baseline-help' },
    h('option', { value: '' }, 'Loading…'));
  const button = h('button', { type: 'submit', class: 'button primary', disabled: true }, 'Compare');
  const help = h('p', { class: 'hint', id: 'baseline-help' });
  const form = h('form', { class: 'compare-form', 'aria-labelledby': 'compare-title' },
    h('div', { class: 'field' }, h('label', { for: 'baseline' }, 'Baseline'), select), button);
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    if (select.value) window.location.hash = compareHash(t.id, select.value);
  });
  const baselineId = t.baselineId || null;
  candidates(t).then((items) => {
    const options = items.map((item) => h('option', { value: item.id, selected: item.id === baselineId },
      item.id === baselineId ? `${label(item)}: its baseline` : label(item)));
    if (baselineId && !items.some((item) => item.id === baselineId)) {
      options.unshift(h('option', { value: baselineId, selected: true }, `its baseline, ${baselineId}`));
    }
    select.replaceChildren(...(options.length ? options : [h('option', { value: '' }, 'No other inspected traceset')]));
    button.disabled = !options.length;
    help.textContent = baselineId
      ? 'Its baseline is chosen; any other inspected traceset of the workspace with the same rank count can be.'
      : 'It has no baseline: choose an inspected traceset of the workspace with the same rank count.';
  }, (error) => {
    select.replaceChildren(h('option', { value: '' }, 'Could not list tracesets'));
    help.textContent = error.message;
  });
  return h('section', { class: 'panel', id: 'compare', 'aria-labelledby': 'compare-title' },
    h('h2', { id: 'compare-title' }, 'Compare with…'), form, help);
}
