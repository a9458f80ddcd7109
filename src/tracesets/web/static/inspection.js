// What inspecting the files found: ranks, world size, gaps, and the per-rank chart.

import { formatCount, h } from './dom.js';
import { METRICS, availableMetrics, legend, rankChart } from './rankchart.js';

/** "0–3, 7, 9–12": ranks as ranges, so a long list stays short. */
export function ranges(ranks) {
  const sorted = [...new Set(ranks)].sort((a, b) => a - b);
  const parts = [];
  for (let i = 0; i < sorted.length; i += 1) {
    let j = i;
    while (j + 1 < sorted.length && sorted[j + 1] === sorted[j] + 1) j += 1;
    parts.push(j > i ? `${sorted[i]}–${sorted[j]}` : String(sorted[i]));
    i = j;
  }
  return parts.join(', ');
}

function summary(inspection) {
  const found = inspection.ranksFound || [];
  const missing = inspection.missingRanks || [];
  const duplicate = inspection.duplicateRanks || [];
  const items = [
    ['World size', Number.isInteger(inspection.worldSize) ? formatCount(inspection.worldSize) : 'unknown'],
    ['Ranks found', found.length ? `${formatCount(found.length)} (${ranges(found)})` : 'none'],
  ];
  if (missing.length) items.push(['Missing ranks', ranges(missing)]);
  if (duplicate.length) items.push(['Duplicated ranks', ranges(duplicate)]);
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
  const box = h('div', { class: 'chart-box' });
  let lastWidth = 0;
  const draw = () => {
    lastWidth = box.clientWidth;
    const chart = rankChart(inspection, metric, lastWidth);
    box.replaceChildren(chart || h('p', { class: 'muted' }, 'No file could be matched to a rank.'));
  };
  new ResizeObserver(() => {
    if (box.isConnected && box.clientWidth !== lastWidth) draw();
  }).observe(box);
  const choices = metrics.length > 1 ? h('fieldset', { class: 'metric-choice' },
    h('legend', {}, 'Bar height'),
    metrics.map((key) => h('label', {},
      h('input', {
        type: 'radio', name: 'metric', value: key, checked: key === metric,
        onchange: () => { metric = key; draw(); },
      }), ` ${METRICS[key].label}`))) : null;
  return [choices, box, legend(inspection)];
}

export function inspectionSection(inspection) {
  const section = h('section', { class: 'panel', id: 'inspection', 'aria-labelledby': 'inspection-title' },
    h('h2', { id: 'inspection-title' }, 'Ranks in the files'));
  if (inspection.status === 'pending') {
    section.append(h('p', { class: 'muted' }, 'The files are being inspected; reload the page in a moment to see the ranks.'));
    return section;
  }
  if (inspection.status === 'failed') {
    section.append(h('div', { class: 'notice error' }, 'Inspecting the files failed.'));
  }
  section.append(
    summary(inspection),
    ...(inspection.files && inspection.files.length ? chartBlock(inspection) : []),
    listOf('Warnings', inspection.warnings),
    listOf('Files that could not be read', inspection.unreadable));
  return section;
}
