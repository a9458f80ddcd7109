// The per-rank figures block of a traceset's view: the GPU time, step time and idle cause
// charts and the top kernels over ranks. The inspection holds the first 256 ranks' figures;
// past them, the rest are read from the traceset's ranks route (up to FETCHED_RANKS), and
// every chart and the kernels table are drawn again from all of them.

import { call } from './api.js';
import { formatCount, h } from './dom.js';
import { idleChart, idleLegend } from './idlechart.js';
import { kernelsBlock } from './kernelspread.js';
import { PARTS, gpuChart, stepChart } from './rankfigures.js';

/** Ranks whose figures the page reads at most (a few kB each). */
export const FETCHED_RANKS = 8192;

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

/** The per-rank figures: the charts, redrawn to the width of their box, and the kernels. */
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
  const idleBox = h('div', { class: 'chart-box idle-box' });
  const kernels = kernelsBlock(inspection);
  kernels.update(figures);
  let lastWidth = 0;
  const draw = () => {
    lastWidth = box.clientWidth;
    const charts = [gpuChart(inspection, figures, lastWidth), stepChart(inspection, figures, lastWidth)].filter(Boolean);
    box.replaceChildren(...(charts.length ? charts : [h('p', { class: 'muted' }, 'No trace has GPU time or steps.')]));
    const idle = idleChart(inspection, figures, lastWidth);
    idleBox.replaceChildren(idle || h('p', { class: 'muted' }, 'No trace has idle time on its GPU streams.'));
  };
  new ResizeObserver(() => {
    if (box.isConnected && box.clientWidth !== lastWidth) draw();
  }).observe(box);
  if (figures.length < total && tracesetId) {
    say(`reading the other ${formatCount(Math.min(total, FETCHED_RANKS) - figures.length)}…`);
    allFigures(tracesetId).then((all) => {
      if (all.length > figures.length) {
        figures = all;
        kernels.update(figures);
      }
      say(total > figures.length ? `the page reads at most ${formatCount(FETCHED_RANKS)}.` : '');
      if (lastWidth) draw();
    }, (error) => say(`the others could not be read: ${error.message}`));
  } else {
    say('');
  }
  return [
    h('h3', {}, 'Per-rank figures'), caption, box, legend(inspection),
    h('h3', {}, 'Idle time by cause'),
    h('p', { class: 'chart-caption' }, 'Each rank\'s GPU idle time over its streams: waiting on the host to launch, '
      + 'waiting on a kernel (gaps under 30 µs), and other idle time.'),
    idleBox, idleLegend(),
    kernels.nodes,
  ];
}
