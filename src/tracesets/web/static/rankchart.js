// The per-rank chart of an inspection: one bar per rank, as SVG. Missing ranks are gaps
// with a marker under the axis; duplicated ranks are drawn in their own colour. Past
// MAX_BARS ranks (a declared count may be two billion) each bar stands for a run of
// ranks, at the height of its largest, so the page never draws more than MAX_BARS bars.

import { formatBytes, formatCount, h, svg } from './dom.js';

const HEIGHT = 240;
const MARGIN = { top: 14, right: 12, bottom: 40, left: 72 };
export const MAX_BARS = 512;

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

/** Per rank: total value and file count; and how many ranks the chart spans. */
function rankValues(inspection, metric) {
  const byRank = new Map();
  for (const file of inspection.files || []) {
    const value = METRICS[metric].of(file);
    if (!Number.isInteger(file.rank) || file.rank < 0 || value === null) continue;
    const entry = byRank.get(file.rank) || { value: 0, files: 0 };
    entry.value += value;
    entry.files += 1;
    byRank.set(file.rank, entry);
  }
  let highest = -1;
  for (const rank of byRank.keys()) highest = Math.max(highest, rank);
  for (const rank of inspection.missingRanks || []) highest = Math.max(highest, rank);
  const worldSize = Number.isInteger(inspection.worldSize) ? inspection.worldSize : 0;
  return { byRank, ranks: Math.max(worldSize, highest + 1) };
}

/** The bars: one per rank, or per run of `per` ranks when there are too many. */
export function rankBars(inspection, metric) {
  const { byRank, ranks } = rankValues(inspection, metric);
  const duplicate = new Set(inspection.duplicateRanks || []);
  const per = Math.max(1, Math.ceil(ranks / MAX_BARS));
  const bars = [];
  for (let first = 0; first < ranks; first += per) {
    const last = Math.min(ranks, first + per) - 1;
    bars.push({ first, last, size: last - first + 1, value: 0, withFiles: 0, files: 0, duplicate: false });
  }
  for (const [rank, entry] of byRank) {
    const bar = bars[Math.floor(rank / per)];
    bar.value = Math.max(bar.value, entry.value);
    bar.withFiles += 1;
    bar.files += entry.files;
    bar.duplicate ||= duplicate.has(rank);
  }
  return { bars, per, ranks };
}

/** Every how many bars a rank label fits, at about 6.5 px a character of the longest. */
function tickStep(count, room, longest) {
  const wanted = Math.max(1, Math.floor(room / (longest * 6.5 + 16)));
  for (const step of [1, 2, 5, 10, 20, 25, 50, 100, 200, 250, 500]) {
    if (count / step <= wanted) return step;
  }
  return Math.ceil(count / wanted);
}

function span(bar) {
  return bar.size === 1 ? `rank ${bar.first}` : `ranks ${formatCount(bar.first)}–${formatCount(bar.last)}`;
}

function describe(bar, format) {
  if (!bar.withFiles) return `${span(bar)}: missing`;
  if (bar.size === 1) {
    return `${span(bar)}: ${format(bar.value)}${bar.files > 1 ? ` in ${bar.files} files` : ''}`
      + (bar.duplicate ? ' (duplicated rank)' : '');
  }
  return `${span(bar)}: ${formatCount(bar.withFiles)} with files, largest ${format(bar.value)}`;
}

/** Bar heights for values from 0 to the largest. Linear, unless the ranks with files differ
 * by 100 times or more: then logarithmic (powers of ten on the axis), so a small rank is not
 * one pixel beside a large one. With no rank that has a file, no value axis at all. */
export function valueScale(bars, plotH) {
  const values = bars.filter((b) => b.withFiles).map((b) => b.value);
  const max = Math.max(0, ...values);
  if (max <= 0) return { kind: 'none', ticks: [], height: () => 0 };
  const min = Math.min(...values.filter((v) => v > 0));
  if (max / min < 100) {
    return { kind: 'linear', ticks: [0, Math.round(max / 2), max], height: (v) => (v / max) * plotH };
  }
  // The axis starts a power of ten below the smallest, so even that one has height.
  const low = Math.floor(Math.log10(min)) - 1;
  const high = Math.log10(max);
  const height = (v) => (v <= 0 ? 0 : Math.max(0, (Math.log10(v) - low) / (high - low)) * plotH);
  const ticks = [];
  const every = Math.max(1, Math.ceil((Math.floor(high) - low) / 5));
  for (let k = low + 1; k <= high; k += every) ticks.push(10 ** k);
  return { kind: 'log', ticks, height };
}

/** The chart for a container `width` pixels wide, or null when no rank is known. */
export function rankChart(inspection, metric, width) {
  const { bars, per, ranks } = rankBars(inspection, metric);
  if (!bars.length) return null;
  const { format, label } = METRICS[metric];
  const w = Math.max(280, Math.floor(width));
  const plotW = w - MARGIN.left - MARGIN.right;
  const plotH = HEIGHT - MARGIN.top - MARGIN.bottom;
  const bottom = MARGIN.top + plotH;
  const scale = valueScale(bars, plotH);
  const slot = plotW / bars.length;
  const barW = slot >= 4 ? slot * 0.78 : slot;
  const x = (i) => MARGIN.left + i * slot + (slot - barW) / 2;

  const named = per === 1 ? `${label} per rank` : `${label} per rank, largest of every ${formatCount(per)} ranks`;
  const title = scale.kind === 'log' ? `${named} (logarithmic scale)` : named;
  const gaps = bars.filter((b) => !b.withFiles).length;
  const desc = `${formatCount(ranks)} ranks in ${formatCount(bars.length)} bars`
    + (gaps ? `, ${formatCount(gaps)} of them with no file` : '');
  const chart = svg('svg', {
    class: 'rank-chart', width: w, height: HEIGHT, viewBox: `0 0 ${w} ${HEIGHT}`,
    role: 'img', 'aria-label': `${title}: ${desc}`, 'data-ranks-per-bar': per, 'data-scale': scale.kind,
  }, svg('title', {}, title), svg('desc', {}, desc));

  for (const tick of scale.ticks) {
    const y = bottom - scale.height(tick);
    chart.append(
      svg('line', { class: 'grid', x1: MARGIN.left, x2: w - MARGIN.right, y1: y, y2: y }),
      svg('text', { class: 'axis-label', x: MARGIN.left - 8, y: y + 4, 'text-anchor': 'end' }, format(tick)),
    );
  }

  // A run of gaps is one shape, so thousands of them neither stripe nor slow the page.
  let gapStart = null;
  bars.forEach((bar, i) => {
    if (!bar.withFiles) {
      gapStart ??= i;
      if (slot >= 6) {
        chart.append(svg('path', { class: 'gap-marker', d: `M${x(i) + barW / 2} ${bottom + 3} l4 6 h-8 z` }));
      }
      if (i + 1 < bars.length && !bars[i + 1].withFiles) return;
      const run = { ...bars[gapStart], last: bar.last, size: bar.last - bars[gapStart].first + 1 };
      chart.append(svg('rect', {
        class: 'gap', x: MARGIN.left + gapStart * slot, y: MARGIN.top,
        width: Math.max((i + 1 - gapStart) * slot, 1), height: plotH,
        'data-rank': run.first, 'data-last-rank': run.last,
      }, svg('title', {}, describe(run, format))));
      gapStart = null;
      return;
    }
    const height = Math.max(2, scale.height(bar.value));
    const kind = bar.duplicate ? ' duplicate' : bar.withFiles < bar.size ? ' partial' : '';
    chart.append(svg('rect', {
      class: `bar${kind}`, x: x(i), y: bottom - height, width: Math.max(barW, 2), height,
      'data-rank': bar.first, 'data-value': bar.value,
    }, svg('title', {}, describe(bar, format))));
  });

  chart.append(svg('line', { class: 'axis', x1: MARGIN.left, x2: w - MARGIN.right, y1: bottom, y2: bottom }));
  const step = tickStep(bars.length, plotW, formatCount(bars[bars.length - 1].first).length);
  for (let i = 0; i < bars.length; i += step) {
    const text = formatCount(bars[i].first);
    const center = MARGIN.left + (i + 0.5) * slot;
    const atEdge = center + text.length * 3.3 > w; // keep the last label inside the chart
    chart.append(svg('text', {
      class: 'axis-label', x: atEdge ? w - 1 : center, y: bottom + 22, 'text-anchor': atEdge ? 'end' : 'middle',
    }, text));
  }
  chart.append(svg('text', {
    class: 'axis-title', x: MARGIN.left + plotW / 2, y: HEIGHT - 4, 'text-anchor': 'middle',
  }, 'rank'));
  return chart;
}

export function legend(inspection, metric) {
  const { bars, per } = rankBars(inspection, metric);
  const items = [];
  if (bars.some((b) => b.withFiles === b.size && !b.duplicate)) {
    items.push(h('li', {}, h('span', { class: 'swatch swatch-bar' }), per === 1 ? 'rank with files' : 'every rank has files'));
  }
  if (bars.some((b) => b.withFiles && b.withFiles < b.size && !b.duplicate)) {
    items.push(h('li', {}, h('span', { class: 'swatch swatch-partial' }), 'some ranks have no file'));
  }
  if (bars.some((b) => !b.withFiles)) {
    items.push(h('li', {}, h('span', { class: 'swatch swatch-gap' }), per === 1 ? 'missing rank (gap)' : 'no rank has a file (gap)'));
  }
  if (bars.some((b) => b.duplicate)) {
    items.push(h('li', {}, h('span', { class: 'swatch swatch-duplicate' }), 'rank in more than one file'));
  }
  return h('ul', { class: 'legend' }, items);
}
