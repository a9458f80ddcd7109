// A traceset against a baseline (#/tracesets/ID/compare/BASELINE): the headline, the
// side-by-side rank bars (every rank, read page after page) and the kernel differences.
// Everything comes from the service's comparison of what both inspections stored.

import { call } from './api.js';
import { COMPARE_PARTS, compareChart, pairBins } from './comparechart.js';
import { cell, formatCount, formatDuration, h, replace } from './dom.js';

/** Ranks the page reads at most, as the traceset's own view does. */
export const FETCHED_RANKS = 8192;
/** Kernel rows shown at first, and added by each "Show more". */
export const SHOWN_KERNELS = 25;
/** Ranks named in the list of those that changed most. */
const NAMED_RANKS = 5;

function comparePath(id, baselineId, rest = '') {
  return `/api/v1/tracesets/${encodeURIComponent(id)}/compare/${encodeURIComponent(baselineId)}${rest}`;
}

export function compareHash(id, baselineId) {
  return `#/tracesets/${encodeURIComponent(id)}/compare/${encodeURIComponent(baselineId)}`;
}

function backLink(id) {
  return h('nav', { class: 'crumbs', 'aria-label': 'Back' },
    h('a', { href: `#/tracesets/${encodeURIComponent(id)}` }, '← The traceset'));
}

/** A traceset's name, or its id when it cannot be read (deleted since, say). */
async function nameOf(id) {
  try {
    return (await call(`/api/v1/tracesets/${encodeURIComponent(id)}`)).data.name;
  } catch {
    return id;
  }
}

export async function showComparison(main, id, baselineId) {
  document.title = 'Compare · Tracesets';
  replace(main, backLink(id), h('p', { class: 'loading' }, 'Loading…'));
  let answer;
  let names;
  try {
    [answer, names] = await Promise.all([
      call(comparePath(id, baselineId)),
      Promise.all([nameOf(id), nameOf(baselineId)]),
    ]);
  } catch (error) {
    replace(main, backLink(id), h('h1', { tabindex: -1 }, 'Comparison not shown'),
      h('div', { class: 'notice error', role: 'alert' }, error.message));
    return;
  }
  const comparison = answer.data;
  const sides = { traceset: names[0], baseline: names[1] };
  document.title = `${sides.traceset} against ${sides.baseline} · Tracesets`;
  replace(main, backLink(id),
    h('div', { class: 'title-row' }, h('h1', { tabindex: -1 }, 'Compare ', h('span', { class: 'compare-name' }, sides.traceset),
      ' with ', h('span', { class: 'compare-name' }, sides.baseline))),
    headline(comparison, sides),
    ranksSection(comparison, sides),
    kernelsSection(comparison));
}

function signed(value, digits, unit) {
  if (!Number.isFinite(value)) return '–';
  return `${value > 0 ? '+' : value < 0 ? '−' : '±'}${Math.abs(value).toFixed(digits)}${unit}`;
}

function pct(value) {
  return Number.isFinite(value) ? `${value.toFixed(2)} %` : '–';
}

function ms(value) {
  return Number.isFinite(value) ? `${value.toFixed(2)} ms` : '–';
}

/** Each figure of both sides and what changed; the contributors after. */
function headline(comparison, sides) {
  const head = comparison.headline;
  const ratio = Number.isFinite(head.stepRatio)
    ? `×${head.stepRatio.toFixed(3)} (${signed((head.stepRatio - 1) * 100, 1, ' %')})` : '–';
  const rows = [
    ['Median step', 'step', ms(head.stepMs), ms(head.baselineStepMs), ratio],
    ['GPU idle', 'idle', pct(head.gpuIdlePct), pct(head.baselineGpuIdlePct), signed(head.gpuIdleDiffPct, 2, ' points')],
    ['Communication overlap', 'overlap', pct(head.commOverlapPct), pct(head.baselineCommOverlapPct), signed(head.commOverlapDiffPct, 2, ' points')],
  ];
  const table = h('table', { class: 'compare-headline' },
    h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, 'Median over ranks'), h('th', { scope: 'col' }, sides.traceset),
      h('th', { scope: 'col' }, sides.baseline), h('th', { scope: 'col' }, 'Change'))),
    h('tbody', {}, rows.map(([label, key, ours, theirs, change]) => h('tr', { 'data-figure': key },
      h('th', { scope: 'row' }, label),
      cell(sides.traceset, { class: 'num' }, ours),
      cell(sides.baseline, { class: 'num' }, theirs),
      cell('Change', { class: 'num compare-change' }, change)))));
  const contributors = head.contributors || [];
  return h('section', { class: 'panel', id: 'compare-headline', 'aria-labelledby': 'compare-headline-title' },
    h('h2', { id: 'compare-headline-title' }, 'What changed'),
    h('p', { class: 'muted' }, `${formatCount(comparison.rankCount)} ranks against ${formatCount(comparison.baselineRankCount)}.`),
    h('div', { class: 'kernels-box' }, table),
    contributors.length
      ? h('div', {}, h('h3', {}, 'Most of the change'), h('ol', { class: 'contributors' },
        contributors.map((c) => h('li', {}, h('span', { class: 'muted' }, `${c.kind} `), h('code', {}, c.name),
          ` ${change(c.diffUs)}`))))
      : h('p', { class: 'muted' }, 'No kernel or operator changed.'));
}

/** Every compared rank: the answer's first page, then the rest from the ranks route. */
async function allRanks(comparison) {
  const ranks = [...comparison.ranks];
  let cursor = comparison.ranksNextCursor;
  while (cursor && ranks.length < FETCHED_RANKS) {
    const page = await call(comparePath(comparison.tracesetId, comparison.baselineId, `/ranks?${new URLSearchParams({ cursor, limit: 1000 })}`));
    ranks.push(...page.data.items);
    cursor = page.data.nextCursor;
  }
  return ranks.slice(0, FETCHED_RANKS);
}

function legend(sides) {
  const items = COMPARE_PARTS.map((part) => h('li', {}, h('span', { class: `swatch swatch-${part.label}` }), part.label));
  items.push(h('li', {}, `left: ${sides.traceset}; right, paler: ${sides.baseline}`));
  return h('ul', { class: 'legend' }, items);
}

/** The ranks whose GPU idle changed most, in words. */
function changedMost(ranks) {
  const moved = ranks.filter((r) => r.diff && Number.isFinite(r.diff.idlePct) && r.diff.idlePct !== 0)
    .sort((a, b) => Math.abs(b.diff.idlePct) - Math.abs(a.diff.idlePct) || a.rank - b.rank)
    .slice(0, NAMED_RANKS);
  if (!moved.length) return null;
  return h('p', { class: 'chart-caption', id: 'compare-moved' }, 'GPU idle changed most on ',
    moved.map((r, i) => [i ? ', ' : '', `rank ${formatCount(r.rank)} (${signed(r.diff.idlePct, 2, ' points')})`]), '.');
}

function ranksSection(comparison, sides) {
  const section = h('section', { class: 'panel', id: 'compare-ranks', 'aria-labelledby': 'compare-ranks-title' },
    h('h2', { id: 'compare-ranks-title' }, 'Per rank'));
  if (!comparison.perRankCompared) {
    section.append(h('p', { class: 'notice warning' }, comparison.perRankNote || 'The rank counts differ: ranks are not compared one by one.'));
    return section;
  }
  const caption = h('p', { class: 'chart-caption', id: 'compare-caption', 'aria-live': 'polite' }, 'Reading the ranks…');
  const box = h('div', { class: 'chart-box' });
  const moved = h('div');
  let ranks = comparison.ranks;
  let lastWidth = 0;
  const draw = () => {
    lastWidth = box.clientWidth;
    box.replaceChildren(compareChart(ranks, lastWidth, sides) || h('p', { class: 'muted' }, 'No rank of either side has GPU time.'));
  };
  new ResizeObserver(() => {
    if (box.isConnected && box.clientWidth !== lastWidth) draw();
  }).observe(box);
  const told = () => {
    const { per } = pairBins(ranks);
    const one = ranks.filter((r) => r.present !== 'both').length;
    caption.textContent = `GPU time of each rank as Holistic Trace Analysis counts it, in percent of its span, matched by rank number. `
      + (ranks.length >= FETCHED_RANKS ? `The first ${formatCount(ranks.length)} ranks` : `${formatCount(ranks.length)} ranks`)
      + (per > 1 ? `, each pair of bars ${formatCount(per)} ranks with their time added up` : '')
      + (one ? `; ${formatCount(one)} only one side has (▲ under the axis)` : '') + '.';
    replace(moved, changedMost(ranks));
  };
  allRanks(comparison).then((every) => {
    ranks = every;
    told();
    if (box.isConnected) draw();
  }, (error) => {
    caption.textContent = `The ranks past the first ${formatCount(ranks.length)} could not be read: ${error.message}`;
  });
  section.append(caption, box, legend(sides), moved);
  return section;
}

/** A difference in time: "+2.69 ms", "−308 µs", "±0.0 µs". */
function change(us) {
  return `${us > 0 ? '+' : us < 0 ? '−' : '±'}${formatDuration(Math.abs(us))}`;
}

function kernelRow(kernel) {
  return h('tr', { 'data-kernel': kernel.name },
    cell('Kernel', { class: 'kernel-name' }, h('code', {}, kernel.name), h('span', { class: 'muted kernel-type' }, ` ${kernel.type.toLowerCase()}`)),
    cell('Count', { class: 'num' }, formatCount(kernel.count)),
    cell('Baseline count', { class: 'num' }, formatCount(kernel.baselineCount)),
    cell('Time', { class: 'num' }, formatDuration(kernel.sumUs)),
    cell('Baseline time', { class: 'num' }, formatDuration(kernel.baselineSumUs)),
    cell('Difference', { class: `num ${kernel.diffUs > 0 ? 'slower' : kernel.diffUs < 0 ? 'faster' : ''}` }, change(kernel.diffUs)));
}

/** The kernels by absolute difference, a few at first; "Show more" reads on. */
function kernelsSection(comparison) {
  const section = h('section', { class: 'panel', id: 'compare-kernels', 'aria-labelledby': 'compare-kernels-title' },
    h('h2', { id: 'compare-kernels-title' }, 'Kernel differences'),
    h('p', { class: 'chart-caption' }, 'Each side\'s top kernels, summed over its ranks, by how much their time changed.'));
  const kernels = [...comparison.kernels];
  let cursor = comparison.kernelsNextCursor;
  let shown = 0;
  if (!kernels.length) {
    section.append(h('p', { class: 'muted' }, 'Neither side has kernels.'));
    return section;
  }
  const body = h('tbody');
  const more = h('button', { type: 'button', class: 'button', id: 'more-kernels' }, 'Show more kernels');
  const showMore = async () => {
    more.disabled = true;
    while (cursor && kernels.length < shown + SHOWN_KERNELS) {
      const page = await call(comparePath(comparison.tracesetId, comparison.baselineId, `/kernels?${new URLSearchParams({ cursor })}`));
      kernels.push(...page.data.items);
      cursor = page.data.nextCursor;
    }
    const next = kernels.slice(shown, shown + SHOWN_KERNELS);
    body.append(...next.map(kernelRow));
    shown += next.length;
    more.disabled = false;
    more.hidden = shown >= kernels.length && !cursor;
  };
  const read = () => showMore().catch((error) => {
    more.replaceWith(h('p', { class: 'notice error', role: 'alert' }, error.message));
  });
  more.addEventListener('click', read);
  section.append(h('div', { class: 'kernels-box' }, h('table', { class: 'kernel-table compare-kernels' },
    h('thead', {}, h('tr', {}, ['Kernel', 'Count', 'Baseline count', 'Time', 'Baseline time', 'Difference']
      .map((t) => h('th', { scope: 'col' }, t)))),
    body)), more);
  read();
  return section;
}
