// Promotion from the page: the stored metadata, exactly as stored, edited in place and
// promoted; a refusal shows each problem under its member's line. A success changes only
// what promotion changed, so the rest of the page (its charts, the file table and where it
// was scrolled to, what was typed in its filters) stays as it was.

import { call, session } from './api.js';
import { formatCount, h, replace } from './dom.js';
import { JsonSyntaxError, lineText, member, parse, pretty, prettyLines } from './rawjson.js';

export const ROOT = 'workloadMetadata';

/** The stored metadata as a node keeping its literals; null when none is stored. */
export function storedMetadata(answer) {
  let node;
  try {
    node = member(parse(answer.text), ROOT);
  } catch {
    node = parse(JSON.stringify(answer.data[ROOT]));
  }
  return node && !(node.type === 'literal' && node.raw === 'null') ? node : null;
}

export function promotable(t) {
  return t.status === 'ready' || t.status === 'promoted';
}

/**
 * The metadata panel and its Promote button. `promoted(answer)` is called with the
 * service's answer once a promotion succeeds; `panel.update(answer)` then shows its
 * metadata and status in the same elements.
 */
export function promotionSection(answer, promoted) {
  let t = answer.data;
  let metadata = storedMetadata(answer);
  let stored = metadata ? pretty(metadata) : 'null';
  let editing = false;
  const view = h('pre', { class: 'json', id: 'metadata-json', tabindex: 0, 'aria-label': 'Workload metadata, exactly as stored' });
  const editor = h('textarea', {
    id: 'metadata-editor', class: 'json-editor', hidden: true, spellcheck: 'false', autocomplete: 'off',
    autocapitalize: 'off', 'aria-label': 'Workload metadata to promote with (JSON)', 'aria-describedby': 'metadata-editor-hint',
  });
  const hint = h('p', { class: 'hint', id: 'metadata-editor-hint', hidden: true },
    'Editing. Promote checks this object instead of the stored one, and stores it if every check passes.');
  const edit = h('button', { type: 'button', class: 'button', id: 'edit-metadata' }, 'Edit metadata');
  const discard = h('button', { type: 'button', class: 'button quiet', id: 'discard-edits', hidden: true }, 'Discard edits');
  const promote = h('button', { type: 'button', class: 'button primary', id: 'promote' });
  const result = h('div', { class: 'promote-result', id: 'promote-result' });
  const state = h('span', { class: 'hint' }, 'exactly as stored');
  const explain = h('p', { class: 'hint', id: 'promote-hint' });
  const allowed = session.can('promote');

  const setEditing = (on) => {
    editing = on;
    view.hidden = on;
    editor.hidden = !on;
    hint.hidden = !on;
    edit.hidden = on || !allowed;
    discard.hidden = !on;
    state.textContent = on ? 'editing: not stored until promoted' : 'exactly as stored';
    promote.textContent = on ? 'Promote with this metadata' : (t.status === 'promoted' ? 'Promote again' : 'Promote');
    if (on) editor.focus();
  };

  /** Show `next` (the GET or promote answer) in the elements already on the page. */
  const show = (next) => {
    t = next.data;
    metadata = storedMetadata(next);
    stored = metadata ? pretty(metadata) : 'null';
    if (view.textContent !== stored) view.textContent = stored;
    editor.value = stored;
    editor.rows = Math.min(24, Math.max(6, stored.split('\n').length + 1));
    editor.removeAttribute('aria-invalid');
    explain.textContent = !allowed
      ? 'This token does not have the promote scope: sign in with a token that has it to promote.'
      : !promotable(t)
        ? 'This traceset\'s upload is not complete: it can be promoted once it is ready.'
        : t.status === 'promoted'
          ? 'Promoted already. Promoting again runs every check again.'
          : `Promotion checks the metadata against every rule: the rank count must stay the one declared at upload (${
            t.rankCountDerived === null ? 'none' : formatCount(t.rankCountDerived)}), and the descriptive members must have the right types.`;
    promote.disabled = !promotable(t) || !allowed;
    promote.removeAttribute('aria-busy');
    setEditing(false);
  };

  edit.addEventListener('click', () => setEditing(true));
  discard.addEventListener('click', () => {
    editor.value = stored;
    replace(result);
    setEditing(false);
    edit.focus();
  });
  show(answer);
  if (!allowed) promote.setAttribute('aria-describedby', 'promote-hint');

  promote.addEventListener('click', async () => {
    let body = '{}';
    let checked = metadata;
    if (editing && editor.value !== stored) {
      try {
        checked = parse(editor.value);
      } catch (error) {
        if (!(error instanceof JsonSyntaxError)) throw error;
        editor.setAttribute('aria-invalid', 'true');
        replace(result, note('error', 'The metadata is not valid JSON', [error.message]));
        result.firstChild.focus();
        return;
      }
      // The text itself goes out, so every literal reaches the service as typed.
      body = `{"workloadMetadata":${editor.value}\n}`;
    }
    editor.removeAttribute('aria-invalid');
    promote.disabled = true;
    promote.setAttribute('aria-busy', 'true');
    replace(result, h('p', { class: 'loading' }, 'Promoting…'));
    let next;
    try {
      next = await call(`/api/v1/tracesets/${encodeURIComponent(t.id)}/promote`, { method: 'POST', body });
    } catch (error) {
      promote.disabled = false;
      promote.removeAttribute('aria-busy');
      const refused = error.status === 400 && error.errors.length;
      replace(result, refused
        ? refusal(error.errors, checked, editing, () => setEditing(true))
        : note('error', `Not promoted: ${error.message}`, error.errors.slice(1).map((e) => e.message)));
      result.firstChild.focus();
      return;
    }
    show(next);
    promoted(next);
    const groups = warningGroups(next.data);
    replace(result, note('success', 'Promoted.',
      groups.length ? [] : ['Every check passed; the metadata above is what is stored now.'], groups));
    result.firstChild.focus();
  });

  const panel = h('section', { class: 'panel', id: 'promotion', 'aria-labelledby': 'metadata-title' },
    h('div', { class: 'panel-head' },
      h('h2', { id: 'metadata-title' }, 'Workload metadata'),
      state),
    view, editor, hint,
    h('div', { class: 'promote-bar' }, promote, edit, discard),
    explain,
    result);
  return panel;
}

function note(kind, title, lines, groups = []) {
  return h('div', { class: `notice ${kind}`, role: kind === 'error' ? 'alert' : 'status', tabindex: -1 },
    h('strong', {}, title),
    lines.length ? h('ul', {}, lines.map((line) => h('li', {}, line))) : null,
    groups.map(([heading, entries]) => h('div', { class: 'warning-group' },
      h('h3', {}, heading), h('ul', {}, entries.map((entry) => h('li', {}, entry))))));
}

/** Promotion's warnings by kind, each kind under its own heading: the traces' inspection
 * (its own warnings, as the answer's inspection lists them), members not read because of
 * their spelling (named by their path), and anything else (such as an unfinished inspection). */
export function warningGroups(promoted) {
  const fromTraces = new Set(promoted.inspection?.warnings || []);
  const traces = [];
  const spelling = [];
  const other = [];
  for (const warning of promoted.warnings || []) {
    if (fromTraces.has(warning)) traces.push(warning);
    else if (warning.startsWith(`${ROOT}.`)) spelling.push(warning);
    else other.push(warning);
  }
  return [
    ['Promotion does not read these members because of their spelling:', spelling],
    ['What inspecting the traces found:', traces],
    [promoted.inspection?.status === 'pending' ? 'The traces are still being inspected:' : 'Other warnings:', other],
  ].filter(([, entries]) => entries.length);
}

/** The member's own line, or its nearest ancestor's when the member is absent. */
function locate(memberPath, paths) {
  if (memberPath !== ROOT && !memberPath.startsWith(`${ROOT}.`)) return null;
  let path = memberPath;
  while (path) {
    if (paths.has(path)) return path;
    const cut = path.lastIndexOf('.');
    path = cut < 0 ? '' : path.slice(0, cut);
  }
  return null;
}

function refusal(errors, checked, editing, startEditing) {
  const lines = checked ? prettyLines(checked, ROOT) : [{ depth: 0, text: 'null', path: ROOT }];
  const paths = new Set(lines.map((l) => l.path).filter(Boolean));
  const byLine = new Map();
  const elsewhere = [];
  for (const error of errors) {
    const at = locate(String(error.member ?? ''), paths);
    if (at === null) {
      elsewhere.push(error);
    } else {
      byLine.set(at, [...(byLine.get(at) || []), error]);
    }
  }
  const listing = h('div', { class: 'annotated', role: 'group', 'aria-label': 'The metadata checked, each problem under its member' });
  for (const line of lines) {
    const problems = line.path === null ? undefined : byLine.get(line.path);
    listing.append(h('div', { class: problems ? 'aline flagged' : 'aline', 'data-path': line.path },
      h('code', {}, lineText(line))));
    for (const problem of problems || []) listing.append(problemNote(problem, line.depth));
  }
  const count = errors.length === 1 ? '1 problem' : `${errors.length} problems`;
  return h('div', { class: 'refusal', role: 'alert', tabindex: -1 },
    h('h3', {}, `Not promoted: ${count}`),
    h('p', {}, editing
      ? 'Each problem is shown under its member, in the service\'s words. Fix them in the editor above and promote again.'
      : ['Each problem is shown under its member, in the service\'s words. ',
        h('button', { type: 'button', class: 'button', onclick: startEditing }, 'Edit the metadata'),
        ' to fix them, then promote again.']),
    elsewhere.length ? h('ul', { class: 'problems' }, elsewhere.map((e) => problemNote(e, 0, 'li'))) : null,
    listing);
}

/** A dotted path that may wrap after each dot, not inside a name. */
function breakable(path) {
  return path.split('.').flatMap((part, i) => (i ? ['.', h('wbr'), part] : [part]));
}

function problemNote(problem, depth, tag = 'div') {
  return h(tag, { class: `problem indent-${Math.min(depth, 8)}`, 'data-member': problem.member },
    problem.member ? h('code', { class: 'problem-member' }, breakable(problem.member)) : null,
    h('span', { class: 'problem-message' }, problem.message));
}
