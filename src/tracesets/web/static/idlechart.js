// The idle causes of each rank, as SVG: a stacked bar of its GPU streams' idle time waiting
// on the host, waiting on kernels, and for other reasons (HTA's categories), summed over its
// streams. Bars fold runs of ranks as the other per-rank figure charts do (figureBins); a
// folded bar is its idlest rank's, named in its tooltip, so one rank waiting stands out.

import { formatCount, formatDuration, h, svg } from './dom.js';
import { axes, figureBins, frame, perBar, rankLabel, span } from './rankfigures.js';

const HEIGHT = 180;

/** The parts of an idle bar, bottom up. */
export const IDLE_PARTS = [
  { key: 'hostWaitUs', label: 'host wait', css: 'host-wait' },
  { key: 'kernelWaitUs', label: 'kernel wait', css: 'kernel-wait' },
  { key: 'otherUs', label: 'other idle', css: 'other-idle' },
];

/** A cause's share of a rank's idle time, as its bar's tooltip gives it. */
function share(us, totalUs) {
  return totalUs > 0 ? ` (${((100 * us) / totalUs).toFixed(1)} %)` : '';
}

/** Idle time by cause per rank (the idlest of a run), or null when no rank has any. */
export function idleChart(inspection, figures, width) {
  const { bins: all, per } = figureBins(inspection, figures);
  const bins = all.filter((b) => b.idle);
  if (!bins.length) return null;
  const w = Math.max(280, Math.floor(width));
  const max = Math.max(...bins.map((b) => b.idle.totalUs), 1);
  const chart = frame('Idle time by cause per rank',
    `${formatCount(bins.length)} bars${perBar(per)}${per > 1 ? ', each its idlest rank\'s' : ''}; `
    + 'host wait, kernel wait and other idle time over all of a rank\'s streams', w, HEIGHT, per, 'idle-chart');
  const { bottom, plotH, slot, left } = axes(chart, w, HEIGHT, bins.map(rankLabel),
    [[0, '0'], [0.5, formatDuration(max / 2)], [1, formatDuration(max)]]);
  const barW = slot >= 4 ? slot * 0.78 : slot;
  bins.forEach((bin, i) => {
    const x = left + i * slot + (slot - barW) / 2;
    const { idle } = bin;
    const whose = bin.size > 1 ? ` (its idlest, rank ${formatCount(idle.rank)})` : '';
    const bar = svg('g', {
      class: 'idle-bar', 'data-rank': bin.first, 'data-last-rank': bin.last,
      'data-idlest-rank': idle.rank, 'data-us': idle.totalUs, 'data-file': bin.file,
    }, svg('title', {}, `${span(bin)}${whose}: idle ${formatDuration(idle.totalUs)} — `
      + IDLE_PARTS.map((p) => `${p.label} ${formatDuration(idle[p.key])}${share(idle[p.key], idle.totalUs)}`).join(', ')));
    let top = bottom;
    for (const part of IDLE_PARTS) {
      const height = (idle[part.key] / max) * plotH;
      if (height <= 0) continue;
      top -= height;
      bar.append(svg('rect', {
        class: `part part-${part.css}`, x, y: top, width: Math.max(barW, 1), height,
        'data-part': part.label, 'data-us': idle[part.key],
      }));
    }
    chart.append(bar);
  });
  return chart;
}

export function idleLegend() {
  return h('ul', { class: 'legend idle-legend' },
    IDLE_PARTS.map((part) => h('li', {}, h('span', { class: `swatch swatch-${part.css}` }), part.label)));
}
