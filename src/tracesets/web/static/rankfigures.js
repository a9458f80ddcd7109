// Per-rank figures of an inspection, as SVG: GPU time of each rank as a stacked bar
// (compute, communication, memory, other, idle, in percent of its span), and median step
// time per rank; stragglers and members of desynced process groups are marked. Only the
// ranks the inspection shows inline (its first 256) are drawn; the caption says so.

import { formatCount, h, svg } from './dom.js';

const MARGIN = { top: 14, right: 12, bottom: 40, left: 56 };
const GPU_HEIGHT = 220;
const STEP_HEIGHT = 160;

/** The parts of a GPU bar, bottom up: HTA's compute, then its non-compute split, then idle. */
export const PARTS = [
  { key: 'computeUs', label: 'compute' },
  { key: 'communicationUs', label: 'communication' },
  { key: 'memoryUs', label: 'memory' },
  { key: 'otherUs', label: 'other' },
  { key: 'idleUs', label: 'idle' },
];

function ranked(inspection) {
  return (inspection.perRank || []).filter((r) => Number.isInteger(r.rank));
}

function desyncedRanks(inspection) {
  const groups = new Set(inspection.desyncedGroups || []);
  const ranks = new Set();
  for (const figures of ranked(inspection)) {
    for (const group of figures.collectives || []) {
      if (groups.has(group.group)) ranks.add(figures.rank);
    }
  }
  return ranks;
}

function frame(title, desc, width, height) {
  const chart = svg('svg', {
    class: 'rank-chart figures-chart', width, height, viewBox: `0 0 ${width} ${height}`,
    role: 'img', 'aria-label': `${title}: ${desc}`,
  }, svg('title', {}, title), svg('desc', {}, desc));
  return chart;
}

function axes(chart, width, height, labels, ticks) {
  const bottom = height - MARGIN.bottom;
  const plotH = bottom - MARGIN.top;
  for (const [fraction, text] of ticks) {
    const y = bottom - fraction * plotH;
    chart.append(
      svg('line', { class: 'grid', x1: MARGIN.left, x2: width - MARGIN.right, y1: y, y2: y }),
      svg('text', { class: 'axis-label', x: MARGIN.left - 8, y: y + 4, 'text-anchor': 'end' }, text),
    );
  }
  chart.append(svg('line', { class: 'axis', x1: MARGIN.left, x2: width - MARGIN.right, y1: bottom, y2: bottom }));
  const slot = (width - MARGIN.left - MARGIN.right) / labels.length;
  const step = Math.max(1, Math.ceil(labels.length / Math.max(1, Math.floor((width - MARGIN.left) / 36))));
  labels.forEach((label, i) => {
    if (i % step) return;
    chart.append(svg('text', {
      class: 'axis-label', x: MARGIN.left + (i + 0.5) * slot, y: bottom + 22, 'text-anchor': 'middle',
    }, formatCount(label)));
  });
  chart.append(svg('text', {
    class: 'axis-title', x: MARGIN.left + (width - MARGIN.left - MARGIN.right) / 2, y: height - 4, 'text-anchor': 'middle',
  }, 'rank'));
  return { bottom, plotH, slot };
}

function percent(part, whole) {
  return whole > 0 ? `${((100 * part) / whole).toFixed(2)} %` : '–';
}

/** Stacked GPU time per rank, or null when no rank has GPU time. */
export function gpuChart(inspection, width) {
  const ranks = ranked(inspection).filter((r) => r.gpu && r.gpu.kernelUs > 0);
  if (!ranks.length) return null;
  const w = Math.max(280, Math.floor(width));
  const desynced = desyncedRanks(inspection);
  const chart = frame('GPU time per rank', `${formatCount(ranks.length)} ranks, each bar 100 % of its GPU span`, w, GPU_HEIGHT);
  const { bottom, plotH, slot } = axes(chart, w, GPU_HEIGHT, ranks.map((r) => r.rank),
    [[0, '0 %'], [0.5, '50 %'], [1, '100 %']]);
  const barW = slot >= 4 ? slot * 0.78 : slot;
  ranks.forEach((figures, i) => {
    const x = MARGIN.left + i * slot + (slot - barW) / 2;
    const gpu = figures.gpu;
    let top = bottom;
    const bar = svg('g', { class: 'gpu-bar', 'data-rank': figures.rank });
    for (const part of PARTS) {
      const value = Math.max(0, gpu[part.key] || 0);
      const height = (value / gpu.kernelUs) * plotH;
      if (height <= 0) continue;
      top -= height;
      bar.append(svg('rect', {
        class: `part part-${part.label}`, x, y: top, width: Math.max(barW, 1), height,
        'data-part': part.label, 'data-us': value,
      }, svg('title', {}, `rank ${figures.rank}: ${part.label} ${percent(value, gpu.kernelUs)}`)));
    }
    chart.append(bar);
    if (desynced.has(figures.rank)) {
      chart.append(svg('path', {
        class: 'desync-marker', 'data-rank': figures.rank, d: `M${x + barW / 2} ${bottom + 3} l4 6 h-8 z`,
      }, svg('title', {}, `rank ${figures.rank} is in a process group whose members disagree`)));
    }
  });
  return chart;
}

/** Median step time per rank, stragglers in their own colour; null without steps. */
export function stepChart(inspection, width) {
  const ranks = ranked(inspection).filter((r) => r.steps && r.steps.medianUs !== null && r.steps.medianUs !== undefined);
  if (!ranks.length) return null;
  const w = Math.max(280, Math.floor(width));
  const max = Math.max(...ranks.map((r) => r.steps.maxUs ?? r.steps.medianUs), 1);
  const ms = (us) => `${(us / 1000).toFixed(1)} ms`;
  const chart = frame('Median step time per rank', `${formatCount(ranks.length)} ranks; the line spans each rank's shortest to longest step`, w, STEP_HEIGHT);
  const { bottom, plotH, slot } = axes(chart, w, STEP_HEIGHT, ranks.map((r) => r.rank),
    [[0, '0'], [0.5, ms(max / 2)], [1, ms(max)]]);
  const barW = slot >= 4 ? slot * 0.78 : slot;
  ranks.forEach((figures, i) => {
    const x = MARGIN.left + i * slot + (slot - barW) / 2;
    const { medianUs, minUs, maxUs, count } = figures.steps;
    const height = Math.max(1, (medianUs / max) * plotH);
    chart.append(svg('rect', {
      class: `step-bar${figures.straggler ? ' straggler' : ''}`, x, y: bottom - height,
      width: Math.max(barW, 1), height, 'data-rank': figures.rank, 'data-median-us': medianUs,
    }, svg('title', {}, `rank ${figures.rank}: median step ${ms(medianUs)} of ${formatCount(count)}`
      + (figures.straggler ? ' (straggler)' : ''))));
    if (minUs !== null && maxUs !== null && maxUs > minUs) {
      const cx = x + barW / 2;
      chart.append(svg('line', {
        class: 'step-range', x1: cx, x2: cx, y1: bottom - (minUs / max) * plotH, y2: bottom - (maxUs / max) * plotH,
      }));
    }
  });
  return chart;
}

function legend(inspection) {
  const items = PARTS.map((part) => h('li', {}, h('span', { class: `swatch swatch-${part.label}` }), part.label));
  if ((inspection.stragglers || []).length) {
    items.push(h('li', {}, h('span', { class: 'swatch swatch-straggler' }), 'straggler'));
  }
  if ((inspection.desyncedGroups || []).length) {
    items.push(h('li', {}, h('span', { class: 'swatch swatch-desync' }), 'in a desynced process group'));
  }
  return h('ul', { class: 'legend' }, items);
}

/** The per-rank figures: both charts, redrawn to the width of their box. */
export function figuresBlock(inspection) {
  const box = h('div', { class: 'chart-box figures-box' });
  let lastWidth = 0;
  const draw = () => {
    lastWidth = box.clientWidth;
    const charts = [gpuChart(inspection, lastWidth), stepChart(inspection, lastWidth)].filter(Boolean);
    box.replaceChildren(...(charts.length ? charts : [h('p', { class: 'muted' }, 'No trace has GPU time or steps.')]));
  };
  new ResizeObserver(() => {
    if (box.isConnected && box.clientWidth !== lastWidth) draw();
  }).observe(box);
  const shown = (inspection.perRank || []).length;
  const total = inspection.perRankCount || shown;
  const caption = `GPU time as Holistic Trace Analysis counts it, in percent of each rank's GPU span; step time is the median of each rank's ProfilerStep`
    + (total > shown ? `. The first ${formatCount(shown)} of ${formatCount(total)} ranks are shown.` : '.');
  return [h('h3', {}, 'Per-rank figures'), h('p', { class: 'chart-caption' }, caption), box, legend(inspection)];
}
