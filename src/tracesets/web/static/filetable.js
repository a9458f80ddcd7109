// A traceset's files, a page of rows at a time: a job of 100,000 ranks has 100,000 files,
// and a table of all of them would be 178,000 px of DOM before anything else could be read.
// The service pages its files in index order; this table asks for its pages only as far as
// the rows shown need, and for all of them once a filter has to look at every name.

import { call } from './api.js';
import { cell, formatBytes, formatCount, h, plural, replace } from './dom.js';
import { ranges } from './inspection.js';

/** Rows in the DOM at once, whatever the traceset holds. */
export const PAGE_ROWS = 100;
/** Files a request to the service asks for (its own maximum). */
const FETCH_LIMIT = 1000;

/** Each file's ranks, as the inspection matched them (an archive may hold several). */
function ranksByFile(inspection) {
  const byFile = new Map();
  for (const found of inspection?.files || []) {
    if (!Number.isInteger(found.rank)) continue;
    if (!byFile.has(found.file)) byFile.set(found.file, []);
    byFile.get(found.file).push(found.rank);
  }
  return byFile;
}

function fileRow(f, ranks, withRanks) {
  const own = ranks.get(f.name);
  return h('tr', {},
    cell('Name', { class: 'cell-name' }, h('code', {}, f.name)),
    withRanks ? cell('Rank', { class: 'num' }, own ? ranges(own) : h('span', { class: 'muted' }, '—')) : null,
    cell('Role', {}, f.role),
    cell('Size', { class: 'num' }, formatBytes(f.size),
      f.size >= 1024 ? h('span', { class: 'muted exact' }, ` ${formatCount(f.size)} bytes`) : null),
    cell('Received', {},
      f.received ? h('span', { class: 'yes' }, 'yes') : h('span', { class: 'no' }, 'not yet')));
}

function filterField(id, label, attrs) {
  return h('div', { class: 'field' }, h('label', { for: id }, label), h('input', { id, autocomplete: 'off', spellcheck: 'false', ...attrs }));
}

/** The files section: filter, one page of rows, a pager. */
export function filesSection(t, inspection) {
  const files = [...t.files];
  let cursor = t.filesNextCursor;
  let loading = null; // the request under way, shared by whoever needs more files
  let failure = null;
  let page = 0;
  const ranks = ranksByFile(inspection);
  const withRanks = ranks.size > 0;

  const name = filterField('files-filter', 'Name contains', { type: 'search', 'aria-controls': 'files-table' });
  const rank = withRanks
    ? filterField('files-rank', 'Rank', { type: 'number', min: 0, step: 1, inputmode: 'numeric', 'aria-controls': 'files-table' })
    : null;
  const nameInput = name.querySelector('input');
  const rankInput = rank?.querySelector('input');
  const body = h('tbody', {});
  const state = h('p', { class: 'pager-state', id: 'files-state', 'aria-live': 'polite' });
  const previous = h('button', { type: 'button', class: 'button', id: 'files-previous' }, '← Previous');
  const next = h('button', { type: 'button', class: 'button', id: 'files-next' }, 'Next →');
  const problem = h('div', { class: 'promote-result' });

  const filter = () => {
    const text = nameInput.value.trim().toLowerCase();
    const wanted = rankInput && rankInput.value.trim() !== '' ? Number(rankInput.value) : null;
    if (!text && wanted === null) return null;
    return (f) => (!text || f.name.toLowerCase().includes(text))
      && (wanted === null || (ranks.get(f.name) || []).includes(wanted));
  };

  /** One more page from the service; concurrent callers wait on the same request. */
  const fetchMore = () => {
    loading ??= (async () => {
      try {
        const path = `/api/v1/tracesets/${encodeURIComponent(t.id)}/files`;
        const answer = await call(`${path}?${new URLSearchParams({ cursor, limit: FETCH_LIMIT })}`);
        files.push(...answer.data.items);
        cursor = answer.data.nextCursor;
        failure = null;
      } catch (error) {
        failure = error;
      } finally {
        loading = null;
      }
    })();
    return loading;
  };

  const draw = () => {
    const focused = document.activeElement;
    const match = filter();
    const shown = match ? files.filter(match) : files;
    const complete = !cursor;
    const known = match ? shown.length : t.fileCount;
    const pages = Math.max(1, Math.ceil(known / PAGE_ROWS));
    page = Math.min(page, pages - 1);
    const first = page * PAGE_ROWS;
    const rows = shown.slice(first, first + PAGE_ROWS);
    replace(body, rows.map((f) => fileRow(f, ranks, withRanks)));
    const searching = match && !complete ? ` (searched ${formatCount(files.length)} of ${formatCount(t.fileCount)} files…)` : '';
    const wanted = `${formatCount(first + 1)}–${formatCount(Math.min(first + PAGE_ROWS, t.fileCount))}`;
    if (!match && t.fileCount <= PAGE_ROWS) {
      state.textContent = `${plural(t.fileCount, 'file', 'files')}.`;
    } else if (!match && rows.length < Math.min(PAGE_ROWS, t.fileCount - first) && !complete) {
      state.textContent = failure
        ? `Files ${wanted} of ${formatCount(t.fileCount)} could not be read.`
        : `Reading files ${wanted} of ${formatCount(t.fileCount)}…`;
    } else if (!rows.length) {
      state.textContent = match ? `No file matches${searching || '.'}` : 'No files.';
    } else {
      const range = `${formatCount(first + 1)}–${formatCount(first + rows.length)}`;
      state.textContent = match
        ? `Files ${range} of ${formatCount(shown.length)} matching${searching || ` (of ${formatCount(t.fileCount)})`}.`
        : `Files ${range} of ${formatCount(t.fileCount)}.`;
    }
    previous.disabled = page === 0;
    next.disabled = first + PAGE_ROWS >= (match ? shown.length : t.fileCount);
    const alone = !match && t.fileCount <= PAGE_ROWS;
    previous.hidden = alone;
    next.hidden = alone;
    // A pager button that just turned disabled hands the keyboard to the other one.
    if (focused === next && next.disabled && !previous.disabled) previous.focus();
    if (focused === previous && previous.disabled && !next.disabled) next.focus();
    replace(problem, failure
      ? h('div', { class: 'notice error', role: 'alert' }, `More files could not be shown: ${failure.message} `,
        h('button', { type: 'button', class: 'button', onclick: () => { fill(); next.focus(); } }, 'Try again'))
      : null);
  };

  /** Fetch until the current page is full or, with a filter, until every file is read. */
  let generation = 0;
  const fill = async () => {
    const mine = ++generation;
    failure = null; // each page turn or filter asks again after a failed request
    draw();
    while (cursor && !failure && mine === generation) {
      const needed = filter() ? Infinity : (page + 1) * PAGE_ROWS;
      if (files.length >= needed) break;
      await fetchMore();
      if (mine === generation) draw();
    }
    if (mine === generation) draw();
  };

  const onFilter = () => {
    page = 0;
    fill();
  };
  nameInput.addEventListener('input', onFilter);
  rankInput?.addEventListener('input', onFilter);
  previous.addEventListener('click', () => {
    page = Math.max(0, page - 1);
    fill();
  });
  next.addEventListener('click', () => {
    page += 1;
    fill();
  });
  fill();

  const headings = ['Name', withRanks ? 'Rank' : null, 'Role', 'Size', 'Received'].filter(Boolean);
  return h('section', { class: 'panel', id: 'files', 'aria-labelledby': 'files-title' },
    h('h2', { id: 'files-title' }, 'Files'),
    h('form', { class: 'file-filters', role: 'search', 'aria-label': 'Filter files', onsubmit: (e) => e.preventDefault() },
      name, rank),
    h('table', { class: 'files', id: 'files-table' },
      h('caption', { class: 'visually-hidden' }, `Files, ${formatCount(PAGE_ROWS)} a page, in the order they were declared`),
      h('thead', {}, h('tr', {}, headings.map((c) => h('th', { scope: 'col' }, c)))),
      body),
    h('nav', { class: 'pager', 'aria-label': 'Pages of files' }, previous, state, next),
    problem);
}
