// The per-rank chart of an inspection: one bar per rank, as SVG. Past MAX_BARS ranks (a
// declared count may be two billion) each bar stands for a run of ranks, at the height of
// its largest, so the page never draws more than MAX_BARS bars. Whatever a bar holds, a
// missing rank in it gets a red mark under the axis and a duplicated one an amber mark, and
// one outsized rank is clipped at the axis's top (robustTop) rather than rescaling the rest.

import { formatBytes, formatCount, h, svg } from './dom.js';

const HEIGHT = 240;
const MARGIN = { top: 14, right: 12, bottom: 48, left: 72 };
const MARK_W = 5;
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

/** Per rank with a file: its files' total value (null when none has one) and file count;
 * and how many ranks the chart spans. */
function rankValues(inspection, metric) {
  const byRank = new Map();
  for (const file of inspection.files || []) {
    if (!Number.isInteger(file.rank) || file.rank < 0) continue;
    const value = METRICS[metric].of(file);
    const entry = byRank.get(file.rank) || { value: null, files: 0 };
    if (value !== null) entry.value = (entry.value ?? 0) + value;
    entry.files += 1;
    byRank.set(file.rank, entry);
  }
  let highest = -1;
  for (const rank of byRank.keys()) highest = Math.max(highest, rank);
  for (const rank of inspection.missingRanks || []) highest = Math.max(highest, rank);
  const worldSize = Number.isInteger(inspection.worldSize) ? inspection.worldSize : 0;
  return { byRank, ranks: Math.max(worldSize, highest + 1) };
}

/** Ranks a bar's title names one by one; past this many it counts them. */
const NAMED = 4;

/**
 * The bars: one per rank, or per run of `per` ranks when there are too many. Each knows
 * how many of its ranks have no file (`missing`, the first few by number in
 * `missingRanks`) and which of its ranks are in more than one file (`duplicates`), so
 * that one missing or duplicated rank among thousands still gets its own mark.
 */
export function rankBars(inspection, metric) {
  const { byRank, ranks } = rankValues(inspection, metric);
  const duplicate = new Set(inspection.duplicateRanks || []);
  const per = Math.max(1, Math.ceil(ranks / MAX_BARS));
  const bars = [];
  for (let first = 0; first < ranks; first += per) {
    const last = Math.min(ranks, first + per) - 1;
    bars.push({
      first, last, size: last - first + 1, value: 0, withFiles: 0, files: 0,
      duplicate: false, duplicates: [], missing: 0, missingRanks: [],
    });
  }
  for (const [rank, entry] of byRank) {
    const bar = bars[Math.floor(rank / per)];
    bar.value = Math.max(bar.value, entry.value ?? 0);
    bar.withFiles += 1;
    bar.files += entry.files;
    if (duplicate.has(rank) || entry.files > 1) bar.duplicates.push(rank);
  }
  // A shortened inspection lists the files of its first ranks only: past the last rank it
  // lists, a rank is missing when missingRanks says so, and not known otherwise.
  const listed = inspection.truncated ? Math.max(-1, ...byRank.keys()) : Infinity;
  const missing = new Set(inspection.missingRanks || []);
  for (const bar of bars) {
    bar.duplicate = bar.duplicates.length > 0;
    bar.duplicates.sort((a, b) => a - b);
    bar.unknown = Math.max(0, bar.last - Math.max(bar.first - 1, listed));
    bar.missing = bar.size - bar.unknown - bar.withFiles;
  }
  for (const rank of missing) {
    if (rank >= ranks) continue;
    const bar = bars[Math.floor(rank / per)];
    if (bar.missingRanks.length < NAMED) bar.missingRanks.push(rank);
    if (rank <= listed) continue;
    bar.missing += 1;
    bar.unknown -= 1;
  }
  for (const bar of bars) {
    bar.gap = !bar.withFiles && !bar.unknown;
    // missingRanks may be cut short: then a bar of a few ranks looks at each of them.
    if (bar.missingRanks.length < Math.min(bar.missing, NAMED) && bar.size <= 64) {
      for (let rank = bar.first; rank <= Math.min(bar.last, listed) && bar.missingRanks.length < NAMED; rank += 1) {
        if (!byRank.has(rank) && !missing.has(rank)) bar.missingRanks.push(rank);
      }
    }
    bar.missingRanks.sort((a, b) => a - b);
  }
  return { bars, per, ranks };
}

/** The quantile `q` of sorted values, interpolated between neighbours. */
function quantile(sorted, q) {
  const at = (sorted.length - 1) * q;
  const low = Math.floor(at);
  return sorted[low] + (sorted[Math.min(low + 1, sorted.length - 1)] - sorted[low]) * (at - low);
}

/**
 * The top of the value axis: the largest value, unless it lies past Tukey's far-out fence
 * (the third quartile plus three interquartile ranges) of four or more bars; then the
 * fence, and the bars above it are drawn clipped. So a rank twice in the files (its sizes
 * added up) or one huge trace cannot squash every other bar to a sliver.
 */
export function robustTop(values) {
  const max = Math.max(0, ...values);
  if (values.length < 4) return max;
  const sorted = [...values].sort((a, b) => a - b);
  const q1 = quantile(sorted, 0.25);
  const q3 = quantile(sorted, 0.75);
  const fence = q3 + 3 * (q3 - q1);
  return fence > 0 && fence < max ? fence : max;
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

/** "rank 17", "ranks 17, 19", or "3 ranks": the first few by number, else a count. */
function some(ranks, count) {
  if (count > ranks.length || count > NAMED) return `${formatCount(count)} ranks`;
  return `${ranks.length === 1 ? 'rank' : 'ranks'} ${ranks.map(formatCount).join(', ')}`;
}

function describe(bar, format, top) {
  if (!bar.withFiles) return `${span(bar)}: missing`;
  const notes = [];
  if (bar.size > 1 && bar.missing) notes.push(`${some(bar.missingRanks, bar.missing)} missing`);
  if (bar.duplicates.length) {
    notes.push(bar.size === 1 ? 'duplicated rank' : `${some(bar.duplicates, bar.duplicates.length)} in more than one file`);
  }
  if (bar.value > top) notes.push(`clipped at ${format(top)}`);
  const value = bar.size === 1
    ? `${format(bar.value)}${bar.files > 1 ? ` in ${bar.files} files` : ''}`
    : `largest ${format(bar.value)}`;
  return `${span(bar)}: ${value}${notes.length ? ` (${notes.join('; ')})` : ''}`;
}

/** Bar heights for values from 0 to the robust top (robustTop). Linear, unless the bars
 * differ by 100 times or more below that top: then logarithmic (powers of ten on the
 * axis), so a small rank is not one pixel beside a large one, and the top is the robust
 * one of the values' logarithms (ranks spread evenly over many powers of ten are not
 * outliers). With no rank that has a file, no value axis at all. */
export function valueScale(bars, plotH) {
  const values = bars.filter((b) => b.withFiles).map((b) => b.value);
  const linearTop = robustTop(values);
  if (linearTop <= 0) return { kind: 'none', top: 0, ticks: [], height: () => 0 };
  const positive = values.filter((v) => v > 0);
  const min = Math.min(...positive);
  if (linearTop / min < 100) {
    const max = linearTop;
    return { kind: 'linear', top: max, ticks: [0, Math.round(max / 2), max], height: (v) => (Math.min(v, max) / max) * plotH };
  }
  const logs = positive.map(Math.log10);
  const logTop = robustTop(logs);
  const max = logTop < Math.max(...logs) ? 10 ** logTop : Math.max(...positive);
  // The axis starts a power of ten below the smallest, so even that one has height.
  const low = Math.floor(Math.log10(min)) - 1;
  const high = Math.log10(max);
  const height = (v) => (v <= 0 ? 0 : Math.min(1, Math.max(0, (Math.log10(v) - low) / (high - low))) * plotH);
  const ticks = [];
  const every = Math.max(1, Math.ceil((Math.floor(high) - low) / 5));
  for (let k = low + 1; k <= high; k += every) ticks.push(10 ** k);
  return { kind: 'log', top: max, ticks, height };
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
  // A mark under the axis is at least MARK_W wide: one rank among thousands stays visible.
  const markW = Math.max(barW, MARK_W);
  const markX = (i) => Math.min(Math.max(MARGIN.left, x(i) + barW / 2 - markW / 2), w - MARGIN.right - markW);

  const named = per === 1 ? `${label} per rank` : `${label} per rank, largest of every ${formatCount(per)} ranks`;
  const title = scale.kind === 'log' ? `${named} (logarithmic scale)` : named;
  const gaps = bars.filter((b) => b.gap).length;
  const withMissing = bars.filter((b) => b.missing).length;
  const clipped = bars.filter((b) => b.withFiles && b.value > scale.top).length;
  const desc = `${formatCount(ranks)} ranks in ${formatCount(bars.length)} bars`
    + (gaps ? `, ${formatCount(gaps)} of them with no file` : '')
    + (withMissing > gaps ? `, ${formatCount(withMissing - gaps)} more with a missing rank` : '')
    + (clipped ? `, ${formatCount(clipped)} clipped at ${format(scale.top)}` : '');
  const chart = svg('svg', {
    class: 'rank-chart', width: w, height: HEIGHT, viewBox: `0 0 ${w} ${HEIGHT}`,
    role: 'img', 'aria-label': `${title}: ${desc}`, 'data-ranks-per-bar': per, 'data-scale': scale.kind,
    'data-top': scale.top,
  }, svg('title', {}, title), svg('desc', {}, desc));

  for (const tick of scale.ticks) {
    const y = bottom - scale.height(tick);
    chart.append(
      svg('line', { class: 'grid', x1: MARGIN.left, x2: w - MARGIN.right, y1: y, y2: y }),
      svg('text', { class: 'axis-label', x: MARGIN.left - 8, y: y + 4, 'text-anchor': 'end' }, format(tick)),
    );
  }

  // A run of gaps (or of ranks not listed) is one shape, so thousands of them neither
  // stripe nor slow the page.
  const runOf = (bar) => (bar.gap ? 'gap' : bar.withFiles ? null : 'unlisted');
  let runStart = null;
  bars.forEach((bar, i) => {
    if (bar.missing) {
      chart.append(svg('rect', {
        class: 'missing-mark', x: markX(i), y: bottom + 2, width: markW, height: 6,
        'data-rank': bar.first, 'data-last-rank': bar.last, 'data-ranks': bar.missingRanks.join(' '),
      }, svg('title', {}, bar.size === 1 ? `${span(bar)}: missing` : `${span(bar)}: ${some(bar.missingRanks, bar.missing)} missing`)));
    }
    if (bar.duplicate) {
      chart.append(svg('rect', {
        class: 'duplicate-mark', x: markX(i), y: bottom + 9, width: markW, height: 6,
        'data-rank': bar.first, 'data-last-rank': bar.last, 'data-ranks': bar.duplicates.join(' '),
      }, svg('title', {}, `${span(bar)}: ${some(bar.duplicates, bar.duplicates.length)} in more than one file`)));
    }
    const run = runOf(bar);
    if (run) {
      runStart ??= i;
      if (i + 1 < bars.length && runOf(bars[i + 1]) === run) return;
      const joined = { ...bars[runStart], last: bar.last, size: bar.last - bars[runStart].first + 1 };
      chart.append(svg('rect', {
        class: run, x: MARGIN.left + runStart * slot, y: MARGIN.top,
        width: Math.max((i + 1 - runStart) * slot, 1), height: plotH,
        'data-rank': joined.first, 'data-last-rank': joined.last,
      }, svg('title', {}, run === 'gap'
        ? describe(joined, format, scale.top)
        : `${span(joined)}: not in the shortened list of inspected files`)));
      runStart = null;
      return;
    }
    const height = Math.max(2, scale.height(bar.value));
    const kind = bar.duplicate ? ' duplicate' : bar.missing ? ' partial' : '';
    const over = bar.value > scale.top;
    chart.append(svg('rect', {
      class: `bar${kind}${over ? ' clipped' : ''}`, x: x(i), y: bottom - height, width: Math.max(barW, 2), height,
      'data-rank': bar.first, 'data-last-rank': bar.last, 'data-value': bar.value,
    }, svg('title', {}, describe(bar, format, scale.top))));
    if (over) {
      // An arrow above the plot: this bar goes on past the top of the axis.
      chart.append(svg('path', {
        class: 'clip-marker', 'data-rank': bar.first,
        d: `M${x(i) + Math.max(barW, 2) / 2 - markW / 2} ${MARGIN.top - 2} h${markW} l${-markW / 2} -8 z`,
      }));
    }
  });

  chart.append(svg('line', { class: 'axis', x1: MARGIN.left, x2: w - MARGIN.right, y1: bottom, y2: bottom }));
  const step = tickStep(bars.length, plotW, formatCount(bars[bars.length - 1].first).length);
  for (let i = 0; i < bars.length; i += step) {
    const text = formatCount(bars[i].first);
    const center = MARGIN.left + (i + 0.5) * slot;
    const atEdge = center + text.length * 3.3 > w; // keep the last label inside the chart
    chart.append(svg('text', {
      class: 'axis-label', x: atEdge ? w - 1 : center, y: bottom + 30, 'text-anchor': atEdge ? 'end' : 'middle',
    }, text));
  }
  chart.append(svg('text', {
    class: 'axis-title', x: MARGIN.left + plotW / 2, y: HEIGHT - 4, 'text-anchor': 'middle',
  }, 'rank'));
  return chart;
}

export function legend(inspection, metric) {
  const { bars, per } = rankBars(inspection, metric);
  const { top } = valueScale(bars, 1);
  const items = [];
  const item = (swatch, text) => items.push(h('li', {}, h('span', { class: `swatch swatch-${swatch}` }), text));
  if (bars.some((b) => b.withFiles && !b.missing && !b.duplicate)) {
    item('bar', per === 1 ? 'rank with files' : 'every rank has files');
  }
  if (bars.some((b) => b.withFiles && b.missing && !b.duplicate)) item('partial', 'some ranks have no file');
  if (bars.some((b) => b.gap)) item('gap', per === 1 ? 'missing rank (gap)' : 'no rank has a file (gap)');
  if (bars.some((b) => !b.gap && !b.withFiles)) item('unlisted', 'not in the shortened list of inspected files');
  if (bars.some((b) => b.duplicate)) item('duplicate', per === 1 ? 'rank in more than one file' : 'a rank in more than one file');
  if (bars.some((b) => b.missing)) item('missing-mark', per === 1 ? 'missing rank (mark under the axis)' : 'a missing rank among them (mark under the axis)');
  if (bars.some((b) => b.duplicate)) item('duplicate-mark', 'a duplicated rank (mark under the axis)');
  if (bars.some((b) => b.withFiles && b.value > top)) item('clip', `taller than the axis (clipped, ▲ above it)`);
  return h('ul', { class: 'legend' }, items);
}
