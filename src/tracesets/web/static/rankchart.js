// The per-rank chart of an inspection: one bar per rank, as SVG. Missing ranks are gaps
// with a marker under the axis; duplicated ranks are drawn in their own colour.

import { formatBytes, formatCount, h, svg } from './dom.js';

const HEIGHT = 240;
const MARGIN = { top: 14, right: 12, bottom: 40, left: 72 };

/** What a bar can measure: file size always, an event count when the inspection has one. */
export const METRICS = {
  size: { label: 'File size', of: (file) => file.size, format: formatBytes },
  events: {
    label: 'Events',
    of: (file) => (Number.isInteger(file.events) ? file.events : null),
    format: (n) => `${formatCount(n)} events`,
  },
};

export function availableMetrics(inspection) {
  const files = inspection.files || [];
  return Object.keys(METRICS).filter((key) => files.some((f) => METRICS[key].of(f) !== null));
}

/** Per rank: total value and file count, and the rank range to draw. */
export function rankValues(inspection, metric) {
  const byRank = new Map();
  for (const file of inspection.files || []) {
    const value = METRICS[metric].of(file);
    if (!Number.isInteger(file.rank) || file.rank < 0 || value === null) continue;
    const entry = byRank.get(file.rank) || { value: 0, files: 0 };
    entry.value += value;
    entry.files += 1;
    byRank.set(file.rank, entry);
  }
  const missing = new Set(inspection.missingRanks || []);
  let highest = -1;
  for (const rank of [...byRank.keys(), ...missing]) highest = Math.max(highest, rank);
  const ranks = Math.max(Number.isInteger(inspection.worldSize) ? inspection.worldSize : 0, highest + 1);
  return { byRank, missing, duplicate: new Set(inspection.duplicateRanks || []), ranks };
}

function tickStep(count, room) {
  const wanted = Math.max(1, Math.floor(room / 44));
  for (const step of [1, 2, 5, 10, 20, 25, 50, 100, 200, 250, 500, 1000, 2000, 5000, 10000]) {
    if (count / step <= wanted) return step;
  }
  return Math.ceil(count / wanted);
}

/** The chart for a container `width` pixels wide, or null when no rank is known. */
export function rankChart(inspection, metric, width) {
  const { byRank, missing, duplicate, ranks } = rankValues(inspection, metric);
  if (ranks === 0) return null;
  const { format, label } = METRICS[metric];
  const w = Math.max(280, Math.floor(width));
  const plotW = w - MARGIN.left - MARGIN.right;
  const plotH = HEIGHT - MARGIN.top - MARGIN.bottom;
  const bottom = MARGIN.top + plotH;
  let max = 1;
  for (const entry of byRank.values()) max = Math.max(max, entry.value);
  const slot = plotW / ranks;
  const barW = slot >= 4 ? slot * 0.78 : slot;
  const x = (rank) => MARGIN.left + rank * slot + (slot - barW) / 2;

  const title = `${label} per rank`;
  const found = byRank.size;
  const desc = `${formatCount(ranks)} ranks, ${formatCount(found)} with files`
    + (missing.size ? `, ${formatCount(missing.size)} missing` : '')
    + (duplicate.size ? `, ${formatCount(duplicate.size)} duplicated` : '');
  const chart = svg('svg', {
    class: 'rank-chart', width: w, height: HEIGHT, viewBox: `0 0 ${w} ${HEIGHT}`,
    role: 'img', 'aria-label': `${title}: ${desc}`,
  }, svg('title', {}, title), svg('desc', {}, desc));

  for (const fraction of [0, 0.5, 1]) {
    const y = bottom - fraction * plotH;
    chart.append(
      svg('line', { class: 'grid', x1: MARGIN.left, x2: w - MARGIN.right, y1: y, y2: y }),
      svg('text', { class: 'axis-label', x: MARGIN.left - 8, y: y + 4, 'text-anchor': 'end' },
        format(Math.round(max * fraction))),
    );
  }

  for (let rank = 0; rank < ranks; rank += 1) {
    const entry = byRank.get(rank);
    if (missing.has(rank) || !entry) {
      chart.append(svg('rect', {
        class: 'gap', x: MARGIN.left + rank * slot, y: MARGIN.top, width: Math.max(slot, 1), height: plotH,
        'data-rank': rank,
      }, svg('title', {}, `rank ${rank}: missing`)));
      chart.append(svg('path', {
        class: 'gap-marker', 'data-rank': rank,
        d: `M${x(rank) + barW / 2} ${bottom + 3} l4 6 h-8 z`,
      }));
      continue;
    }
    const height = Math.max(1, (entry.value / max) * plotH);
    const files = entry.files === 1 ? '' : ` in ${entry.files} files`;
    chart.append(svg('rect', {
      class: duplicate.has(rank) ? 'bar duplicate' : 'bar',
      x: x(rank), y: bottom - height, width: Math.max(barW, 0.5), height,
      'data-rank': rank, 'data-value': entry.value,
    }, svg('title', {}, `rank ${rank}: ${format(entry.value)}${files}`
      + (duplicate.has(rank) ? ' (duplicated rank)' : ''))));
  }

  chart.append(svg('line', { class: 'axis', x1: MARGIN.left, x2: w - MARGIN.right, y1: bottom, y2: bottom }));
  const step = tickStep(ranks, plotW);
  for (let rank = 0; rank < ranks; rank += step) {
    chart.append(svg('text', {
      class: 'axis-label', x: MARGIN.left + (rank + 0.5) * slot, y: bottom + 22, 'text-anchor': 'middle',
    }, String(rank)));
  }
  chart.append(svg('text', {
    class: 'axis-title', x: MARGIN.left + plotW / 2, y: HEIGHT - 4, 'text-anchor': 'middle',
  }, 'rank'));
  return chart;
}

export function legend(inspection) {
  const items = [h('li', {}, h('span', { class: 'swatch swatch-bar' }), 'rank with files')];
  if ((inspection.missingRanks || []).length) {
    items.push(h('li', {}, h('span', { class: 'swatch swatch-gap' }), 'missing rank (gap)'));
  }
  if ((inspection.duplicateRanks || []).length) {
    items.push(h('li', {}, h('span', { class: 'swatch swatch-duplicate' }), 'rank in more than one file'));
  }
  return h('ul', { class: 'legend' }, items);
}
