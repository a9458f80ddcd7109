// The list of tracesets: the API's filters and sorts, status and rank count, cursor pages.

import { call, query } from './api.js';
import { DEFAULT_SORT, SORTS, STATUSES, FILTERS as VOCABULARY } from './vocabulary.js';
import { cell, formatBytes, formatCount, h, plural, replace, statusBadge, timeElement } from './dom.js';

const PAGE_SIZE = 20;

// The service's own list of filters and sorts (tracesets.vocabulary, rendered into
// vocabulary.js): fields for the text and number ones, selects for the status, the
// yes/no ones and the order. Integers count from 1; decimals (percentages, milliseconds) take any finite number.
const INPUT_ATTRIBUTES = {
  integer: { type: 'number', min: 1, step: 1, inputmode: 'numeric' },
  decimal: { type: 'number', step: 'any', inputmode: 'decimal' },
  text: { type: 'text' },
};
export const FILTERS = VOCABULARY
  .filter((f) => Object.hasOwn(INPUT_ATTRIBUTES, f.kind))
  .map((f) => ({ name: f.name, label: f.label, kind: f.kind }));
// The order is no filter: it has no "Any", and takes a whole row where rows are narrow.
const SORT = {
  name: 'sort', label: 'Sort by', options: SORTS.map((s) => [s.value, s.label]), fallback: DEFAULT_SORT, wide: true,
};
const CHOICES = [
  ...VOCABULARY.filter((f) => f.kind === 'status').map((f) => ({
    name: f.name, label: f.label,
    options: [['', 'Any'], ...STATUSES.map((s) => [s, s[0].toUpperCase() + s.slice(1)])],
  })),
  ...VOCABULARY.filter((f) => f.kind === 'boolean').map((f) => ({
    name: f.name, label: f.label, options: [['', 'Any'], ['true', 'Yes'], ['false', 'No']],
  })),
];
const NAMES = [...FILTERS.map((f) => f.name), ...CHOICES.map((c) => c.name), SORT.name];
const sortLabel = (sort) => SORTS.find((s) => s.value === sort)?.label ?? sort;

// The cursors of the pages seen for the current filters, so Previous needs no cursor of its own.
let pages = { key: null, cursors: [null], index: 0 };

export function filtersOf(params) {
  const filters = {};
  for (const name of NAMES) {
    const value = params.get(name);
    if (value) filters[name] = value;
  }
  return filters;
}

function field(filter, value) {
  const id = `filter-${filter.name}`;
  const input = h('input', {
    id, name: filter.name, value: value || '', autocomplete: 'off', spellcheck: 'false',
    ...INPUT_ATTRIBUTES[filter.kind], 'aria-describedby': `${id}-error`,
  });
  return h('div', { class: 'field' },
    h('label', { for: id }, filter.label),
    input,
    h('p', { class: 'field-error', id: `${id}-error`, 'data-member': filter.name }));
}

function choiceField(choice, value) {
  const id = `filter-${choice.name}`;
  const chosen = value || choice.fallback || '';
  const select = h('select', { id, name: choice.name, 'aria-describedby': `${id}-error` },
    choice.options.map(([v, label]) => h('option', { value: v, selected: v === chosen }, label)));
  return h('div', { class: choice.wide ? 'field field-wide' : 'field' },
    h('label', { for: id }, choice.label),
    select,
    h('p', { class: 'field-error', id: `${id}-error`, 'data-member': choice.name }));
}

function filterForm(filters, navigate) {
  const form = h('form', { class: 'filters', role: 'search', 'aria-label': 'Filter tracesets', novalidate: true },
    h('div', { class: 'filter-fields' },
      FILTERS.map((f) => field(f, filters[f.name])),
      CHOICES.map((c) => choiceField(c, filters[c.name])),
      choiceField(SORT, filters.sort)),
    h('div', { class: 'filter-actions' },
      h('button', { type: 'submit', class: 'button primary' }, 'Apply filters'),
      h('button', {
        type: 'button', class: 'button', onclick: () => navigate('#/'),
      }, 'Clear')));
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    if (!numbersRead(form)) return;
    const chosen = {};
    for (const name of NAMES) chosen[name] = form.elements.namedItem(name).value.trim();
    if (chosen.sort === DEFAULT_SORT) delete chosen.sort;
    navigate(`#/${query(chosen)}`);
  });
  // A new order is wanted at once: it reloads the list with the filters as they stand.
  form.elements.namedItem(SORT.name).addEventListener('change', () => form.requestSubmit());
  return form;
}

// A number field holding text the browser cannot read as a number reports an empty value,
// which would drop the filter silently: say so by the field instead of listing everything.
function numbersRead(form) {
  const unread = [...form.querySelectorAll('input[type="number"]')].filter((i) => i.validity.badInput);
  for (const input of unread) {
    form.querySelector(`.field-error[data-member="${CSS.escape(input.name)}"]`).textContent = 'Enter a number, such as 12.5.';
    input.setAttribute('aria-invalid', 'true');
  }
  unread[0]?.focus();
  return !unread.length;
}

function workloadOf(traceset) {
  const m = traceset.workloadMetadata;
  const text = (v) => (typeof v === 'string' && v ? v : null);
  const family = m && typeof m === 'object' ? text(m.workload_family) : null;
  const name = m && typeof m === 'object' ? text(m.workload_name) : null;
  if (!family && !name) return h('span', { class: 'muted' }, '—');
  return h('span', { class: 'workload' },
    family ? h('span', { class: 'workload-family' }, family) : null,
    family && name ? h('span', { class: 'muted' }, ' / ') : null,
    name ? h('span', { class: 'workload-name' }, name) : null);
}

function row(t) {
  return h('tr', { 'data-id': t.id },
    cell('Name', { class: 'cell-name' },
      h('a', { href: `#/tracesets/${encodeURIComponent(t.id)}` }, t.name)),
    cell('Status', {}, statusBadge(t.status)),
    cell('Ranks', { class: 'num' },
      t.rankCountDerived === null ? h('span', { class: 'muted' }, '—') : formatCount(t.rankCountDerived)),
    cell('Workload', {}, workloadOf(t)),
    cell('Files', {}, `${plural(t.fileCount, 'file', 'files')} · ${formatBytes(t.fileBytes)}`),
    cell('Created', {}, timeElement(t.createdAt)));
}

function table(items, sort) {
  return h('table', { class: 'tracesets' },
    h('caption', { class: 'visually-hidden' }, `Tracesets, ${sortLabel(sort)}`),
    h('thead', {}, h('tr', {},
      ['Name', 'Status', 'Ranks', 'Workload', 'Files', 'Created'].map((c) => h('th', { scope: 'col' }, c)))),
    h('tbody', {}, items.map(row)));
}

function showFieldProblems(form, errors) {
  const rest = [];
  for (const error of errors) {
    const slot = form.querySelector(`.field-error[data-member="${CSS.escape(String(error.member))}"]`);
    if (slot) {
      slot.textContent = error.message;
      slot.previousElementSibling.setAttribute('aria-invalid', 'true');
    } else {
      rest.push(error);
    }
  }
  return rest;
}

export async function showList(main, params, navigate) {
  const filters = filtersOf(params);
  const sort = filters.sort || DEFAULT_SORT;
  const sorted = sort !== DEFAULT_SORT;
  const key = query(filters);
  if (pages.key !== key) pages = { key, cursors: [null], index: 0 };
  const heading = h('h1', { tabindex: -1 }, 'Tracesets');
  const form = filterForm(filters, navigate);
  const results = h('div', { class: 'results', 'aria-live': 'polite' });
  replace(main, 
    h('div', { class: 'title-row' }, heading,
      h('p', { class: 'lede' }, `${sortLabel(sort)}${sorted ? ', only those whose inspection measured it' : ''}.`
        + ' Open one to see its files and metadata, and to promote it.')),
    form, results);

  const load = async (fromPager) => {
    replace(results, h('p', { class: 'loading' }, 'Loading…'));
    let answer;
    try {
      answer = await call(`/api/v1/tracesets${query({ ...filters, limit: PAGE_SIZE, cursor: pages.cursors[pages.index] })}`);
    } catch (error) {
      const rest = showFieldProblems(form, error.errors || []);
      replace(results, h('div', { class: 'notice error', role: 'alert' },
        error.errors?.length && !rest.length ? 'Check the filters: the service refused them.' : error.message,
        rest.length > 1 ? h('ul', {}, rest.map((e) => h('li', {}, e.message))) : null));
      return;
    }
    const { items, nextCursor } = answer.data;
    if (nextCursor && pages.cursors.length === pages.index + 1) pages.cursors.push(nextCursor);
    if (!items.length && pages.index === 0) {
      replace(results, h('div', { class: 'empty' }, key
        ? [sorted ? 'No traceset matches these filters and has this figure. ' : 'No traceset matches these filters. ', h('button', { type: 'button', class: 'button', onclick: () => navigate('#/') }, 'Clear filters')]
        : 'No tracesets in this workspace yet. Upload one with the tracesets command or the API; it shows here once its upload URLs are requested.'));
      return;
    }
    const first = pages.index * PAGE_SIZE + 1;
    const alone = pages.index === 0 && !nextCursor;
    const pager = h('nav', { class: 'pager', 'aria-label': 'Pages' },
      h('button', {
        type: 'button', class: 'button', disabled: pages.index === 0, hidden: alone,
        onclick: () => { pages.index -= 1; load('newer'); },
        'data-page': 'newer',
      }, sorted ? '← Previous' : '← Newer'),
      h('span', { class: 'pager-state' }, alone
        ? plural(items.length, 'traceset', 'tracesets')
        : `${formatCount(first)}–${formatCount(first + items.length - 1)}`),
      h('button', {
        type: 'button', class: 'button', disabled: !nextCursor, hidden: alone,
        onclick: () => { pages.index += 1; load('older'); },
        'data-page': 'older',
      }, sorted ? 'Next →' : 'Older →'));
    replace(results, table(items, sort), pager);
    if (fromPager) {
      // Keep the keyboard where it was: on the button pressed, or the other one at an end.
      const buttons = [...pager.querySelectorAll('button')];
      (buttons.find((b) => b.dataset.page === fromPager && !b.disabled) || buttons.find((b) => !b.disabled))?.focus();
    }
  };
  await load();
}
