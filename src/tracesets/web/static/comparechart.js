// Side-by-side rank bars of a comparison: for each rank a pair of bars, the traceset's
// then its baseline's, each its GPU time split into compute, non-compute and idle (100 %
// of its span). Past MAX_PAIRS ranks a pair stands for a run of ranks, their time added
// up on each side, so 8,192 ranks draw as 128 pairs and a run that changed still shows.

import { formatCount, svg } from './dom.js';
import { axes, frame, perBar } from './rankfigures.js';

const HEIGHT = 240;
export const MAX_PAIRS = 128;

/** A bar's parts, bottom up, as the comparison names them. */
export const COMPARE_PARTS = [
  { key: 'computeUs', label: 'compute' },
  { key: 'nonComputeUs', label: 'non-compute' },
  { key: 'idleUs', label: 'idle' },
];
export const SIDES = ['traceset', 'baseline'];

function span(bin) {
  return bin.first === bin.last ? `rank ${formatCount(bin.first)}` : `ranks ${formatCount(bin.first)}–${formatCount(bin.last)}`;
}

/** One side's time of a rank, or null when it has none (no GPU events, or not that side). */
function timeOf(breakdown) {
  if (!breakdown) return null;
  const parts = COMPARE_PARTS.map((p) => breakdown[p.key]);
  return parts.every((us) => Number.isFinite(us)) && parts.some((us) => us > 0) ? parts : null;
}

/**
 * The compared ranks in runs of `per` (at most MAX_PAIRS runs): each run with its first and
 * last rank and, for each side, its ranks' compute, non-compute and idle time added up (null
 * when none of them has any), and how many of its ranks only one side has.
 */
export function pairBins(ranks) {
  const per = Math.max(1, Math.ceil(ranks.length / MAX_PAIRS));
  const bins = [];
  for (let i = 0; i < ranks.length; i += per) {
    const members = ranks.slice(i, i + per);
    const bin = { first: members[0].rank, last: members[members.length - 1].rank, size: members.length, oneSided: 0 };
    for (const side of SIDES) {
      let sum = null;
      for (const row of members) {
        const parts = timeOf(row[side]);
        if (!parts) continue;
        sum = (sum || [0, 0, 0]).map((us, at) => us + parts[at]);
      }
      bin[side] = sum;
    }
    bin.oneSided = members.filter((row) => row.present !== 'both').length;
    bins.push(bin);
  }
  return { bins, per };
}

function percent(part, whole) {
  return `${((100 * part) / whole).toFixed(2)} %`;
}

/** The chart for a box `width` pixels wide; null when no rank of either side has GPU time. */
export function compareChart(ranks, width, names) {
  const { bins: all, per } = pairBins(ranks);
  const bins = all.filter((b) => b.traceset || b.baseline);
  if (!bins.length) return null;
  const w = Math.max(280, Math.floor(width));
  const chart = frame('GPU time per rank, this traceset beside its baseline',
    `${formatCount(bins.length)} pairs of bars${perBar(per)}, each bar 100 % of its GPU span: `
    + `${names.traceset} on the left, ${names.baseline} on the right`, w, HEIGHT, per, 'compare-chart');
  const labels = bins.map((b) => formatCount(b.first));
  const { bottom, plotH, slot, left } = axes(chart, w, HEIGHT, labels, [[0, '0 %'], [0.5, '50 %'], [1, '100 %']]);
  const pairW = slot >= 6 ? slot * 0.8 : slot;
  const barW = pairW / 2;
  bins.forEach((bin, i) => {
    const pair = svg('g', { class: 'compare-pair', 'data-rank': bin.first, 'data-last-rank': bin.last });
    SIDES.forEach((side, at) => {
      const parts = bin[side];
      if (!parts) return;
      const whole = parts.reduce((a, b) => a + b, 0);
      const x = left + i * slot + (slot - pairW) / 2 + at * barW;
      const bar = svg('g', { class: `compare-bar side-${side}`, 'data-side': side });
      let top = bottom;
      COMPARE_PARTS.forEach((part, k) => {
        const height = (parts[k] / whole) * plotH;
        if (height <= 0) return;
        top -= height;
        bar.append(svg('rect', {
          class: `part part-${part.label}`, x, y: top, width: Math.max(barW - (slot >= 6 ? 1 : 0), 0.5), height,
          'data-part': part.label, 'data-us': parts[k],
        }, svg('title', {}, `${span(bin)}, ${names[side]}: ${part.label} ${percent(parts[k], whole)}`)));
      });
      pair.append(bar);
    });
    if (bin.oneSided) {
      pair.append(svg('path', {
        class: 'one-sided-marker', d: `M${left + (i + 0.5) * slot} ${bottom + 3} l4 6 h-8 z`,
      }, svg('title', {}, `${span(bin)}: ${formatCount(bin.oneSided)} of its ranks only one side has`)));
    }
    chart.append(pair);
  });
  return chart;
}
