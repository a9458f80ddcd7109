// What inspecting the files found: ranks, world size, gaps, and the per-rank chart.

import { append, formatCount, h } from './dom.js';
import { METRICS, availableMetrics, legend, rankBars, rankChart } from './rankchart.js';
import { figuresBlock } from './figuresblock.js';

const SHOWN_RUNS = 20;

/** "0–3, 7, 9–12": ranks as runs, the first few, then how many more. */
export function ranges(ranks, total = null) {
  const sorted = [...new Set(ranks)].sort((a, b) => a - b);
  const runs = [];
  for (let i = 0; i < sorted.length; i += 1) {
    let j = i;
    while (j + 1 < sorted.length && sorted[j + 1] === sorted[j] + 1) j += 1;
    runs.push([sorted[i], sorted[j]]);
    i = j;
  }
  const shown = runs.slice(0, SHOWN_RUNS);
  const text = shown.map(([a, b]) => (a === b ? formatCount(a) : `${formatCount(a)}–${formatCount(b)}`));
  const more = (total ?? sorted.length) - shown.reduce((n, [a, b]) => n + b - a + 1, 0);
  return text.join(', ') + (more > 0 ? ` and ${formatCount(more)} more` : '');
}

/** "rank 0 (3 files), rank 5 (2 files)", or "none": never a bare rank number. */
export function duplicated(ranks, files) {
  if (!ranks.length) return 'none';
  const count = new Map();
  for (const file of files) {
    if (Number.isInteger(file.rank)) count.set(file.rank, (count.get(file.rank) || 0) + 1);
  }
  const shown = ranks.slice(0, SHOWN_RUNS).map((rank) => `rank ${formatCount(rank)} (${formatCount(count.get(rank) || 0)} files)`);
  const more = ranks.length - shown.length;
  return shown.join(', ') + (more > 0 ? ` and ${formatCount(more)} more ranks` : '');
}

function summary(inspection) {
  const found = inspection.ranksFound || [];
  const missing = inspection.missingRanks || [];
  const duplicate = inspection.duplicateRanks || [];
  const items = [
    ['World size', Number.isInteger(inspection.worldSize) ? formatCount(inspection.worldSize) : 'unknown'],
    ['Ranks found', found.length ? `${formatCount(found.length)} (${ranges(found)})` : 'none'],
  ];
  const missingCount = Number.isInteger(inspection.missingRankCount) ? inspection.missingRankCount : null;
  if (missing.length || missingCount) items.push(['Missing ranks', ranges(missing, missingCount)]);
  items.push(['Duplicated ranks', duplicated(duplicate, inspection.files || [])]);
  return h('dl', { class: 'facts compact' },
    items.map(([term, value]) => h('div', { class: 'fact' }, h('dt', {}, term), h('dd', {}, value))));
}

function listOf(title, entries) {
  if (!entries || !entries.length) return null;
  return h('div', { class: 'notice warning' }, h('strong', {}, title), h('ul', {}, entries.map((e) => h('li', {}, e))));
}

function chartBlock(inspection) {
  const metrics = availableMetrics(inspection);
  let metric = metrics[0] || 'size';
  const { per } = rankBars(inspection, metric);
  const box = h('div', { class: 'chart-box' });
  const key = h('div', { class: 'rank-legend' });
  let lastWidth = 0;
  const draw = () => {
    lastWidth = box.clientWidth;
    const chart = rankChart(inspection, metric, lastWidth);
    box.replaceChildren(chart || h('p', { class: 'muted' }, 'No file could be matched to a rank.'));
    key.replaceChildren(legend(inspection, metric));
  };
  new ResizeObserver(() => {
    if (box.isConnected && box.clientWidth !== lastWidth) draw();
  }).observe(box);
  const choices = metrics.length > 1
    ? h('fieldset', { class: 'metric-choice' },
      h('legend', {}, 'Bar height'),
      metrics.map((key) => h('label', {},
        h('input', {
          type: 'radio', name: 'metric', value: key, checked: key === metric,
          onchange: () => { metric = key; draw(); },
        }), ` ${METRICS[key].label}`)))
    : h('p', { class: 'chart-caption' }, `Bar height: ${METRICS[metric].label.toLowerCase()} of each rank's files`
      + (per > 1 ? `; each bar is ${formatCount(per)} ranks, as tall as the largest of them` : ''));
  const shortened = inspection.truncated
    ? h('p', { class: 'hint' }, 'The inspection is too long to send whole: it lists the files of its first ranks only. '
      + 'Past them, a rank is drawn missing only when the list of missing ranks names it.')
    : null;
  return [choices, shortened, box, key];
}

export function inspectionSection(inspection, tracesetId) {
  const section = h('section', { class: 'panel', id: 'inspection', 'aria-labelledby': 'inspection-title' },
    h('h2', { id: 'inspection-title' }, 'Ranks in the files'));
  if (inspection.status === 'pending') {
    section.append(h('p', { class: 'muted' }, 'The files are being inspected; reload the page in a moment to see the ranks.'));
    return section;
  }
  if (inspection.status === 'failed') {
    section.append(h('div', { class: 'notice error' }, 'Inspecting the files failed.'));
  }
  append(section, [
    summary(inspection),
    inspection.files && inspection.files.length ? chartBlock(inspection) : null,
    inspection.perRank && inspection.perRank.length ? figuresBlock(inspection, tracesetId) : null,
    listOf('Warnings', inspection.warnings),
    listOf('Files that could not be read', inspection.unreadable),
  ]);
  return section;
}
