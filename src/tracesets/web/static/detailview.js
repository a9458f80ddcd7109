// One traceset: its facts first, then what inspecting its traces found, Compare with…, its
// metadata and Promote, and last its files, a page at a time (there may be 100,000 of them).

import { call, session } from './api.js';
import { compareSection } from './comparepick.js';
import { filesSection } from './filetable.js';
import { formatBytes, formatCount, h, plural, replace, statusBadge, timeElement } from './dom.js';
import { inspectionSection } from './inspection.js';
import { promotable, promotionSection } from './promotion.js';

export async function showTraceset(main, id) {
  replace(main, backLink(), h('p', { class: 'loading' }, 'Loading…'));
  let answer;
  try {
    answer = await call(`/api/v1/tracesets/${encodeURIComponent(id)}`);
  } catch (error) {
    replace(main, backLink(), h('h1', { tabindex: -1 }, 'Traceset not shown'),
      h('div', { class: 'notice error', role: 'alert' }, error.message));
    return;
  }
  render(main, answer);
}

function backLink() {
  return h('nav', { class: 'crumbs', 'aria-label': 'Back' }, h('a', { href: '#/' }, '← All tracesets'));
}

function fact(term, id) {
  const value = h('dd', { id: id ? `fact-${id}` : null });
  return [h('div', { class: id === 'id' ? 'fact fact-wide' : 'fact' }, h('dt', {}, term), value), value];
}

/** The title row and the facts, with a function that shows a later answer in them. */
function header(promotion) {
  const badge = statusBadge('');
  const action = h('button', {
    type: 'button', class: 'button title-action',
    onclick: () => { promotion.scrollIntoView({ block: 'start' }); promotion.querySelector('#promote').focus(); },
  });
  const name = h('h1', { tabindex: -1, class: 'traceset-name' });
  const description = h('p', { class: 'description' });
  // Each fact with what it shows and the members it shows them from.
  const facts = [
    ['Rank count', 'rank-count', ['rankCountDerived'], (t) => (t.rankCountDerived === null ? 'not declared' : formatCount(t.rankCountDerived))],
    ['Files', 'files', ['fileCount', 'fileBytes'], (t) => `${plural(t.fileCount, 'file', 'files')} · ${formatBytes(t.fileBytes)}`],
    ['Created', 'created', ['createdAt'], (t) => timeElement(t.createdAt)],
    ['Updated', 'updated', ['updatedAt'], (t) => timeElement(t.updatedAt)],
    ['Promoted', 'promoted', ['promotedAt'], (t) => timeElement(t.promotedAt)],
    ['ID', 'id', ['id'], (t) => h('code', {}, t.id)],
  ].map(([term, id, members, of]) => [...fact(term, id), members, of]);
  const show = (t) => {
    document.title = `${t.name} · Tracesets`;
    name.textContent = t.name;
    badge.textContent = t.status;
    badge.className = statusBadge(t.status).className;
    action.hidden = !(session.can('promote') && promotable(t));
    action.textContent = t.status === 'ready' ? 'Promote…' : 'Promote again…';
    description.textContent = t.description || '';
    description.hidden = !t.description;
    for (const [, value, members, of] of facts) {
      // Only what changed is touched, so a reader's selection elsewhere survives.
      const from = JSON.stringify(members.map((m) => t[m]));
      if (value.dataset.from !== from) {
        replace(value, of(t));
        value.dataset.from = from;
      }
    }
  };
  const nodes = [
    h('div', { class: 'title-row' }, name, badge, action),
    description,
    h('dl', { class: 'facts' }, facts.map(([box]) => box)),
  ];
  return { nodes, show };
}

function render(main, answer) {
  let t = answer.data;
  let inspection = t.inspection ? inspectionSection(t.inspection, t.id) : null;
  let shownInspection = JSON.stringify(t.inspection ?? null);
  // Promotion changes the status, the metadata, the times and the warnings; the files and
  // (unless it was still pending) the inspection stay as they are, and so do their nodes.
  const promoted = (next) => {
    t = next.data;
    top.show(t);
    const now = JSON.stringify(t.inspection ?? null);
    if (now !== shownInspection) {
      const fresh = t.inspection ? inspectionSection(t.inspection, t.id) : null;
      if (inspection && fresh) inspection.replaceWith(fresh);
      else if (fresh) promotion.before(fresh);
      else inspection?.remove();
      inspection = fresh;
      shownInspection = now;
    }
  };
  const promotion = promotionSection(answer, promoted);
  const top = header(promotion);
  top.show(t);
  const compare = compareSection(t);
  if (compare) {
    // Beside the name, as Promote… is: the section itself is far down a long inspection.
    const promote = top.nodes[0].querySelector('.title-action');
    promote.before(h('button', {
      type: 'button', class: 'button title-action', id: 'compare-with',
      onclick: () => { compare.scrollIntoView({ block: 'start' }); compare.querySelector('#baseline').focus(); },
    }, 'Compare with…'));
  }
  replace(main, backLink(), ...top.nodes, inspection, compare, promotion, filesSection(t, t.inspection));
}
