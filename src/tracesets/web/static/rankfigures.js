// Per-rank figures of an inspection, as SVG: GPU time of each rank as a stacked bar
// (compute, communication, memory, other, idle, in percent of its span), and median step
// time per rank; stragglers and members of desynced process groups are marked. Past
// MAX_BARS ranks a bar stands for a run of ranks: their GPU time added up, their longest
// median step, their idlest rank's idle causes, marked when any of them straggles or is in
// a desynced group. The frame and axes here are shared by every per-rank figure chart.

import { formatCount, svg } from './dom.js';

const MARGIN = { top: 14, right: 12, bottom: 40, left: 56 };
const GPU_HEIGHT = 220;
const STEP_HEIGHT = 160;
export const MAX_BARS = 256;

/** The parts of a GPU bar, bottom up: HTA's compute, then its non-compute split, then idle. */
export const PARTS = [
  { key: 'computeUs', label: 'compute' },
  { key: 'communicationUs', label: 'communication' },
  { key: 'memoryUs', label: 'memory' },
  { key: 'otherUs', label: 'other' },
  { key: 'idleUs', label: 'idle' },
];

/** A trace's idle time by cause, summed over its streams; null without any. HTA counts the
 * gap between kernels overlapping on a stream as a negative kernel wait: it draws as none. */
function idleOf(one) {
  const streams = one.idleBreakdown || [];
  if (!streams.length) return null;
  const idle = { rank: one.rank, hostWaitUs: 0, kernelWaitUs: 0, otherUs: 0, totalUs: 0 };
  for (const stream of streams) {
    for (const key of ['hostWaitUs', 'kernelWaitUs', 'otherUs']) idle[key] += Math.max(0, stream[key] || 0);
  }
  idle.totalUs = idle.hostWaitUs + idle.kernelWaitUs + idle.otherUs;
  return idle;
}

function desyncedRanks(inspection, figures) {
  const groups = new Set(inspection.desyncedGroups || []);
  const ranks = new Set();
  for (const one of figures) {
    for (const group of one.collectives || []) {
      if (groups.has(group.group)) ranks.add(one.rank);
    }
  }
  return ranks;
}

/**
 * The figures of ranked traces, in runs of `per` so there are at most MAX_BARS: each run
 * with its first and last rank, GPU time summed part by part, the longest median step and
 * the range of all its steps, the idle causes of its idlest rank (a sum or a mean would
 * hide one rank waiting among many), and whether any of its ranks straggles or is desynced.
 */
export function figureBins(inspection, figures) {
  const ranked = figures.filter((r) => Number.isInteger(r.rank));
  const desynced = desyncedRanks(inspection, ranked);
  const per = Math.max(1, Math.ceil(ranked.length / MAX_BARS));
  const copies = new Map();
  for (const one of ranked) copies.set(one.rank, (copies.get(one.rank) || 0) + 1);
  const seen = new Map();
  const bins = [];
  for (let i = 0; i < ranked.length; i += per) {
    const members = ranked.slice(i, i + per);
    const bin = {
      first: members[0].rank, last: members[members.length - 1].rank, size: members.length,
      gpu: null, steps: null, idle: null, straggler: false, desynced: false,
      file: members.length === 1 ? traceName(members[0]) : null, copy: 0, copies: 1,
    };
    if (members.length === 1 && copies.get(bin.first) > 1) {  // a duplicated rank: which trace
      bin.copies = copies.get(bin.first);
      bin.copy = (seen.get(bin.first) || 0) + 1;
      seen.set(bin.first, bin.copy);
    }
    for (const one of members) {
      bin.straggler ||= Boolean(one.straggler);
      bin.desynced ||= desynced.has(one.rank);
      if (one.gpu && one.gpu.kernelUs > 0) {
        bin.gpu ??= Object.fromEntries(['kernelUs', ...PARTS.map((p) => p.key)].map((k) => [k, 0]));
        for (const key of Object.keys(bin.gpu)) bin.gpu[key] += Math.max(0, one.gpu[key] || 0);
      }
      const idle = idleOf(one);
      if (idle && (!bin.idle || idle.totalUs > bin.idle.totalUs)) bin.idle = idle;
      const steps = one.steps;
      if (steps && steps.medianUs !== null && steps.medianUs !== undefined) {
        const known = bin.steps || { medianUs: 0, minUs: null, maxUs: null, count: 0 };
        known.medianUs = Math.max(known.medianUs, steps.medianUs);
        known.minUs = Math.min(known.minUs ?? Infinity, steps.minUs ?? steps.medianUs);
        known.maxUs = Math.max(known.maxUs ?? 0, steps.maxUs ?? steps.medianUs);
        known.count += steps.count;
        bin.steps = known;
      }
    }
    bins.push(bin);
  }
  return { bins, per };
}

/** The file a trace's figures came from: "a.zip!rank0.json" for a member of an archive. */
function traceName(one) {
  return one.member ? `${one.file}!${one.member}` : one.file;
}

/** A bar's rank under the axis: "0 #2" for the second trace of a duplicated rank 0. */
export function rankLabel(bin) {
  return bin.copies > 1 ? `${formatCount(bin.first)} #${bin.copy}` : formatCount(bin.first);
}

export function span(bin) {
  if (bin.size > 1) return `ranks ${formatCount(bin.first)}–${formatCount(bin.last)}`;
  return bin.copies > 1 ? `rank ${bin.first} #${bin.copy} of ${bin.copies} (${bin.file})` : `rank ${bin.first}`;
}

export function frame(title, desc, width, height, per, kind = 'figures-chart') {
  const chart = svg('svg', {
    class: `rank-chart ${kind}`, width, height, viewBox: `0 0 ${width} ${height}`,
    role: 'img', 'aria-label': `${title}: ${desc}`, 'data-ranks-per-bar': per,
  }, svg('title', {}, title), svg('desc', {}, desc));
  return chart;
}

/** Pixels an 11 px axis label takes at most per character (system-ui digits are about 6.2,
 * "m" more): the margins are made wide enough for the labels drawn in them, or the
 * SVG's edge cuts them ("1976.2 ms" needs some 60 px). */
const LABEL_CHAR = 7;

/** The margins for these labels: the longest y tick on the left, half the widest rank
 * number right of the last bar's centre. */
function margins(ticks, ranks) {
  const widest = Math.max(...ticks.map(([, text]) => text.length));
  const rank = Math.max(...ranks.map((text) => text.length));
  return {
    ...MARGIN,
    left: Math.max(MARGIN.left, 8 + 4 + widest * LABEL_CHAR),
    right: Math.max(MARGIN.right, Math.ceil((rank * LABEL_CHAR) / 2)),
    rankWidth: rank * LABEL_CHAR,
  };
}

export function axes(chart, width, height, ranks, ticks) {
  const margin = margins(ticks, ranks);
  const bottom = height - margin.bottom;
  const plotH = bottom - margin.top;
  for (const [fraction, text] of ticks) {
    const y = bottom - fraction * plotH;
    chart.append(
      svg('line', { class: 'grid', x1: margin.left, x2: width - margin.right, y1: y, y2: y }),
      svg('text', { class: 'axis-label', x: margin.left - 8, y: y + 4, 'text-anchor': 'end' }, text),
    );
  }
  chart.append(svg('line', { class: 'axis', x1: margin.left, x2: width - margin.right, y1: bottom, y2: bottom }));
  const plotW = width - margin.left - margin.right;
  const slot = plotW / ranks.length;
  const room = Math.max(36, margin.rankWidth + 8);  // a label's width apart, so none overlap
  const step = Math.max(1, Math.ceil(ranks.length / Math.max(1, Math.floor(plotW / room))));
  ranks.forEach((text, i) => {
    if (i % step) return;
    chart.append(svg('text', {
      class: 'axis-label', x: margin.left + (i + 0.5) * slot, y: bottom + 22, 'text-anchor': 'middle',
    }, text));
  });
  chart.append(svg('text', {
    class: 'axis-title', x: margin.left + plotW / 2, y: height - 4, 'text-anchor': 'middle',
  }, 'rank'));
  return { bottom, plotH, slot, left: margin.left };
}

function percent(part, whole) {
  return whole > 0 ? `${((100 * part) / whole).toFixed(2)} %` : '–';
}

export function perBar(per) {
  return per === 1 ? '' : `, each bar ${formatCount(per)} ranks`;
}

/** Stacked GPU time per rank (or run of ranks), or null when no rank has GPU time. */
export function gpuChart(inspection, figures, width) {
  const { bins: all, per } = figureBins(inspection, figures);
  const bins = all.filter((b) => b.gpu);
  if (!bins.length) return null;
  const w = Math.max(280, Math.floor(width));
  const chart = frame('GPU time per rank',
    `${formatCount(bins.length)} bars${perBar(per)}, each 100 % of its GPU span`, w, GPU_HEIGHT, per);
  const { bottom, plotH, slot, left } = axes(chart, w, GPU_HEIGHT, bins.map(rankLabel),
    [[0, '0 %'], [0.5, '50 %'], [1, '100 %']]);
  const barW = slot >= 4 ? slot * 0.78 : slot;
  bins.forEach((bin, i) => {
    const x = left + i * slot + (slot - barW) / 2;
    const gpu = bin.gpu;
    let top = bottom;
    const bar = svg('g', {
      class: 'gpu-bar', 'data-rank': bin.first, 'data-last-rank': bin.last, 'data-file': bin.file,
    });
    for (const part of PARTS) {
      const value = gpu[part.key];
      const height = (value / gpu.kernelUs) * plotH;
      if (height <= 0) continue;
      top -= height;
      bar.append(svg('rect', {
        class: `part part-${part.label}`, x, y: top, width: Math.max(barW, 1), height,
        'data-part': part.label, 'data-us': value,
      }, svg('title', {}, `${span(bin)}: ${part.label} ${percent(value, gpu.kernelUs)}`)));
    }
    chart.append(bar);
    if (bin.desynced) {
      chart.append(svg('path', {
        class: 'desync-marker', 'data-rank': bin.first, 'data-last-rank': bin.last,
        d: `M${x + barW / 2} ${bottom + 3} l4 6 h-8 z`,
      }, svg('title', {}, `${span(bin)}: in a process group whose members disagree`)));
    }
  });
  return chart;
}

/** Median step time per rank (the longest of a run), stragglers in their own colour; null without steps. */
export function stepChart(inspection, figures, width) {
  const { bins: all, per } = figureBins(inspection, figures);
  const bins = all.filter((b) => b.steps);
  if (!bins.length) return null;
  const w = Math.max(280, Math.floor(width));
  const max = Math.max(...bins.map((b) => b.steps.maxUs ?? b.steps.medianUs), 1);
  const ms = (us) => `${(us / 1000).toFixed(1)} ms`;
  const chart = frame('Median step time per rank',
    `${formatCount(bins.length)} bars${perBar(per)}; the line spans the shortest to the longest step`, w, STEP_HEIGHT, per);
  const { bottom, plotH, slot, left } = axes(chart, w, STEP_HEIGHT, bins.map(rankLabel),
    [[0, '0'], [0.5, ms(max / 2)], [1, ms(max)]]);
  const barW = slot >= 4 ? slot * 0.78 : slot;
  bins.forEach((bin, i) => {
    const x = left + i * slot + (slot - barW) / 2;
    const { medianUs, minUs, maxUs, count } = bin.steps;
    const height = Math.max(1, (medianUs / max) * plotH);
    const median = bin.size === 1 ? 'median step' : 'longest median step';
    chart.append(svg('rect', {
      class: `step-bar${bin.straggler ? ' straggler' : ''}`, x, y: bottom - height,
      width: Math.max(barW, 1), height, 'data-rank': bin.first, 'data-last-rank': bin.last, 'data-median-us': medianUs,
      'data-file': bin.file,
    }, svg('title', {}, `${span(bin)}: ${median} ${ms(medianUs)} of ${formatCount(count)}`
      + (bin.straggler ? (bin.size === 1 ? ' (straggler)' : ' (a straggler among them)') : ''))));
    if (minUs !== null && maxUs !== null && maxUs > minUs) {
      const cx = x + barW / 2;
      chart.append(svg('line', {
        class: 'step-range', x1: cx, x2: cx, y1: bottom - (minUs / max) * plotH, y2: bottom - (maxUs / max) * plotH,
      }));
    }
  });
  return chart;
}
