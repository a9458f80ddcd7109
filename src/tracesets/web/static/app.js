// The page's entry: sign in, then the list (#/?filters), one traceset (#/tracesets/ID) or
// a traceset against a baseline (#/tracesets/ID/compare/BASELINE).
// Routes live in the URL's fragment, so the service serves one page and the token never
// appears in a URL.

import { call, session, whenUnauthorized } from './api.js';
import { showComparison } from './compareview.js';
import { showTraceset } from './detailview.js';
import { h } from './dom.js';
import { showList } from './listview.js';

const main = document.getElementById('main');
const sessionBar = document.getElementById('session');

function navigate(hash) {
  if (window.location.hash === hash) route();
  else window.location.hash = hash;
}

function focusHeading() {
  const heading = main.querySelector('h1');
  if (heading) heading.focus({ preventScroll: true });
}

function showSignIn(message) {
  sessionBar.hidden = true;
  document.title = 'Sign in · Tracesets';
  const input = h('input', {
    id: 'token', name: 'token', type: 'password', autocomplete: 'off', spellcheck: 'false',
    autocapitalize: 'off', required: true, 'aria-describedby': 'token-help token-error',
  });
  const error = h('p', { class: 'field-error', id: 'token-error', role: 'alert' }, message || '');
  const button = h('button', { type: 'submit', class: 'button primary' }, 'Sign in');
  const form = h('form', { class: 'signin', 'aria-labelledby': 'signin-title' },
    h('h1', { id: 'signin-title', tabindex: -1 }, 'Sign in'),
    h('p', { id: 'token-help' },
      'Paste the token that ', h('code', {}, 'make serve'), ' printed, or one made with the ',
      h('code', {}, 'tracesets token create … --data-dir …'), ' command it printed; it starts with ', h('code', {}, 'tsk_'),
      '. It stays in this browser tab only, until you sign out or close the tab.'),
    h('div', { class: 'field' }, h('label', { for: 'token' }, 'Token'), input, error),
    h('div', { class: 'filter-actions' }, button));
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    const token = input.value.trim();
    if (!token) {
      error.textContent = 'Paste a token first.';
      input.focus();
      return;
    }
    button.disabled = true;
    error.textContent = '';
    let scopes;
    try {
      ({ scopes } = (await call('/api/v1/whoami', { token })).data);
      if (!scopes.includes('read')) {
        throw new Error('This token does not have the read scope, which this page needs to show tracesets.');
      }
    } catch (failure) {
      button.disabled = false;
      error.textContent = failure instanceof Error ? failure.message : String(failure);
      input.setAttribute('aria-invalid', 'true');
      input.focus();
      return;
    }
    session.signIn(token, scopes);
    route();
  });
  main.replaceChildren(form);
  input.focus();
}

async function route() {
  if (!session.token()) {
    showSignIn();
    return;
  }
  if (session.scopes() === null) {
    // Signed in by an earlier version of this page, which kept no scopes.
    try {
      session.remember((await call('/api/v1/whoami')).data.scopes);
    } catch {
      // Refused: the sign-in form is shown already. Unreachable: nothing is offered that
      // needs a scope, and the next route asks again.
      if (!session.token()) return;
    }
  }
  sessionBar.hidden = false;
  const hash = window.location.hash.replace(/^#/, '') || '/';
  const detail = hash.match(/^\/tracesets\/([^/?]+)$/);
  const compared = hash.match(/^\/tracesets\/([^/?]+)\/compare\/([^/?]+)$/);
  if (compared) {
    await showComparison(main, decodeURIComponent(compared[1]), decodeURIComponent(compared[2]));
  } else if (detail) {
    await showTraceset(main, decodeURIComponent(detail[1]));
  } else {
    document.title = 'Tracesets';
    const at = hash.indexOf('?');
    await showList(main, new URLSearchParams(at < 0 ? '' : hash.slice(at + 1)), navigate);
  }
  if (session.token()) focusHeading();
}

whenUnauthorized((message) => showSignIn(`Signed out: ${message}`));

document.getElementById('sign-out').addEventListener('click', () => {
  session.signOut();
  navigate('#/');
});

window.addEventListener('hashchange', () => route());
route();
