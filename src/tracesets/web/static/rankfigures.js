// Per-rank figures of an inspection, as SVG: GPU time of each rank as a stacked bar
// (compute, communication, memory, other, idle, in percent of its span), and median step
// time per rank; stragglers and members of desynced process groups are marked. The
// inspection holds the first 256 ranks' figures; past them, the rest are read from the
// traceset's ranks route (up to FETCHED_RANKS), and past MAX_BARS ranks a bar stands for a
// run of ranks: their GPU time added up, their longest median step, marked when any of
// them straggles or is in a desynced group.

import { call } from './api.js';
import { formatCount, h, svg } from './dom.js';

const MARGIN = { top: 14, right: 12, bottom: 40, left: 56 };
const GPU_HEIGHT = 220;
const STEP_HEIGHT = 160;
export const MAX_BARS = 256;
/** Ranks whose figures the page reads at most (about 2 kB each: 16 MB of JSON). */
export const FETCHED_RANKS = 8192;

/** The parts of a GPU bar, bottom up: HTA's compute, then its non-compute split, then idle. */
export const PARTS = [
  { key: 'computeUs', label: 'compute' },
  { key: 'communicationUs', label: 'communication' },
  { key: 'memoryUs', label: 'memory' },
  { key: 'otherUs', label: 'other' },
  { key: 'idleUs', label: 'idle' },
];

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
 * the range of all its steps, and whether any of its ranks straggles or is desynced.
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
      gpu: null, steps: null, straggler: false, desynced: false,
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
function rankLabel(bin) {
  return bin.copies > 1 ? `${formatCount(bin.first)} #${bin.copy}` : formatCount(bin.first);
}

function span(bin) {
  if (bin.size > 1) return `ranks ${formatCount(bin.first)}–${formatCount(bin.last)}`;
  return bin.copies > 1 ? `rank ${bin.first} #${bin.copy} of ${bin.copies} (${bin.file})` : `rank ${bin.first}`;
}

function frame(title, desc, width, height, per) {
  const chart = svg('svg', {
    class: 'rank-chart figures-chart', width, height, viewBox: `0 0 ${width} ${height}`,
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

function axes(chart, width, height, ranks, ticks) {
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

function perBar(per) {
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

/** Every trace's figures from the ranks route, up to FETCHED_RANKS; null when refused. */
async function allFigures(tracesetId) {
  const path = `/api/v1/tracesets/${encodeURIComponent(tracesetId)}/ranks`;
  const figures = [];
  let cursor = null;
  do {
    const answer = await call(`${path}?${new URLSearchParams(cursor ? { cursor, limit: 1000 } : { limit: 1000 })}`);
    figures.push(...answer.data.items);
    cursor = answer.data.nextCursor;
  } while (cursor && figures.length < FETCHED_RANKS);
  return figures.slice(0, FETCHED_RANKS);
}

/** The per-rank figures: both charts, redrawn to the width of their box; when the
 * inspection holds only the first of them, the rest are read and the charts drawn again. */
export function figuresBlock(inspection, tracesetId) {
  const box = h('div', { class: 'chart-box figures-box' });
  const caption = h('p', { class: 'chart-caption', id: 'figures-caption', 'aria-live': 'polite' });
  let figures = inspection.perRank || [];
  const total = inspection.perRankCount || figures.length;
  const say = (extra) => {
    caption.textContent = 'GPU time as Holistic Trace Analysis counts it, in percent of each rank\'s GPU span; '
      + 'step time is the median of each rank\'s ProfilerStep. '
      + (figures.length < total ? `The first ${formatCount(figures.length)} of ${formatCount(total)} ranks are shown` : `All ${formatCount(total)} ranks are shown`)
      + (extra ? `; ${extra}` : '.')
      + ((inspection.duplicateRanks || []).length
        ? ' A rank with several traces has a bar for each, numbered (0 #1, 0 #2); its tooltip names the file.' : '');
  };
  let lastWidth = 0;
  const draw = () => {
    lastWidth = box.clientWidth;
    const charts = [gpuChart(inspection, figures, lastWidth), stepChart(inspection, figures, lastWidth)].filter(Boolean);
    box.replaceChildren(...(charts.length ? charts : [h('p', { class: 'muted' }, 'No trace has GPU time or steps.')]));
  };
  new ResizeObserver(() => {
    if (box.isConnected && box.clientWidth !== lastWidth) draw();
  }).observe(box);
  if (figures.length < total && tracesetId) {
    say(`reading the other ${formatCount(Math.min(total, FETCHED_RANKS) - figures.length)}…`);
    allFigures(tracesetId).then((all) => {
      if (all.length > figures.length) figures = all;
      say(total > figures.length ? `the page reads at most ${formatCount(FETCHED_RANKS)}.` : '');
      if (lastWidth) draw();
    }, (error) => say(`the others could not be read: ${error.message}`));
  } else {
    say('');
  }
  return [h('h3', {}, 'Per-rank figures'), caption, box, legend(inspection)];
}
