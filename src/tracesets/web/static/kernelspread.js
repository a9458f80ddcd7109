// The kernels of most GPU time over all ranks, and how their time spreads over the ranks:
// for each, the ranks that ran it, the least, median and most time one rank spent in it,
// and which ranks those were, with a small min–median–max bar so a kernel slow on one rank
// stands out. The service's `inspection.kernelSpread` is used when it has one (it covers
// every rank); otherwise the page works it out from each rank's topKernels as it reads them.

import { cell, formatCount, formatDuration, h, svg } from './dom.js';

/** Rows the table shows: enough to see what dominates, few enough to read. */
export const SHOWN_KERNELS = 15;
const BAR_W = 120;
const BAR_H = 14;

function median(sorted) {
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

/** Per kernel name over all ranked figures (the "other" row is no kernel): its total, the
 * ranks having it, min/median/max of one rank's total and the ranks of min and max. */
export function kernelSpread(figures) {
  const byName = new Map();
  for (const one of figures) {
    if (!Number.isInteger(one.rank)) continue;
    for (const kernel of one.topKernels || []) {
      if (kernel.type === 'OTHER') continue;
      let entry = byName.get(kernel.name);
      if (!entry) {
        entry = { name: kernel.name, type: kernel.type, sums: [] };
        byName.set(kernel.name, entry);
      }
      entry.sums.push([kernel.sumUs, one.rank]);
    }
  }
  const rows = [];
  for (const { name, type, sums } of byName.values()) {
    sums.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
    rows.push({
      name, type, ranks: sums.length,
      sumUs: sums.reduce((total, [us]) => total + us, 0),
      minUs: sums[0][0], minRank: sums[0][1],
      medianUs: median(sums.map(([us]) => us)),
      maxUs: sums[sums.length - 1][0],
      maxRank: sums.find(([us]) => us === sums[sums.length - 1][0])[1],  // the first of a tie, as for min
    });
  }
  return rows.sort((a, b) => b.sumUs - a.sumUs || (a.name < b.name ? -1 : 1));
}

/** min–median–max of one rank's time on a line from 0 to the max: a long tail past the
 * median tick is a rank slower than the rest. */
function spreadBar(row) {
  const x = (us) => 2 + (row.maxUs > 0 ? (us / row.maxUs) * (BAR_W - 4) : 0);
  return svg('svg', {
    class: 'spread', width: BAR_W, height: BAR_H, viewBox: `0 0 ${BAR_W} ${BAR_H}`, role: 'img',
    'aria-label': `least ${formatDuration(row.minUs)}, median ${formatDuration(row.medianUs)}, most ${formatDuration(row.maxUs)}`,
  },
  svg('line', { class: 'spread-axis', x1: 2, x2: BAR_W - 2, y1: BAR_H / 2, y2: BAR_H / 2 }),
  svg('rect', { class: 'spread-range', x: x(row.minUs), y: 3, width: Math.max(1, x(row.maxUs) - x(row.minUs)), height: BAR_H - 6 }),
  svg('line', { class: 'spread-median', x1: x(row.medianUs), x2: x(row.medianUs), y1: 1, y2: BAR_H - 1 }),
  svg('circle', { class: 'spread-max', cx: x(row.maxUs), cy: BAR_H / 2, r: 2.5 }));
}

function onRank(us, rank) {
  return h('span', {}, formatDuration(us), h('span', { class: 'muted' }, ` rank ${formatCount(rank)}`));
}

/** The service's spread has no total (it ranks by it): then the table has no Total column. */
function table(rows) {
  const totals = rows.every((row) => Number.isFinite(row.sumUs));
  const head = ['Kernel', totals ? 'Total' : null, 'Ranks', 'Least', 'Median', 'Most', 'Spread'].filter(Boolean);
  return h('table', { class: 'kernel-table' },
    h('thead', {}, h('tr', {}, head.map((t) => h('th', { scope: 'col' }, t)))),
    h('tbody', {}, rows.map((row) => h('tr', { 'data-kernel': row.name, 'data-max-rank': row.maxRank },
      cell('Kernel', { class: 'kernel-name' }, h('code', {}, row.name), row.type ? h('span', { class: 'muted kernel-type' }, ` ${row.type.toLowerCase()}`) : null),
      totals ? cell('Total', { class: 'num' }, formatDuration(row.sumUs)) : null,
      cell('Ranks', { class: 'num' }, formatCount(row.ranks)),
      cell('Least', { class: 'num' }, onRank(row.minUs, row.minRank)),
      cell('Median', { class: 'num' }, formatDuration(row.medianUs)),
      cell('Most', { class: 'num kernel-max' }, onRank(row.maxUs, row.maxRank)),
      cell('Spread', {}, spreadBar(row))))));
}

/** The block, and how to redraw it from more figures (ignored when the service's spread is used). */
export function kernelsBlock(inspection) {
  // An inspection made before the service kept the spread has an empty one: work it out.
  const fromService = (inspection.kernelSpread || []).length ? inspection.kernelSpread : null;
  const caption = h('p', { class: 'chart-caption', id: 'kernels-caption' });
  const box = h('div', { class: 'kernels-box' });
  const show = (rows, ranks) => {
    const shown = rows.slice(0, SHOWN_KERNELS);
    caption.textContent = `The ${formatCount(shown.length)} kernels of most GPU time over `
      + (ranks === null ? 'all ranks' : `${formatCount(ranks)} ranks`)
      + ': least, median and most time one rank spent in each, and which rank. '
      + 'A rank counts a kernel when it is among its 20 of most time.';
    box.replaceChildren(shown.length ? table(shown) : h('p', { class: 'muted' }, 'No trace has kernels.'));
  };
  const update = (figures) => {
    if (!fromService) show(kernelSpread(figures), figures.filter((one) => Number.isInteger(one.rank)).length);
  };
  if (fromService) show(fromService, null);
  return { nodes: [h('h3', {}, 'Top kernels over ranks'), caption, box], update };
}
