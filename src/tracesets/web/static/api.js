// Talking to /api/v1: the token from this tab's session storage as a bearer header,
// never in a URL; answers come back with their raw text so stored JSON keeps its digits.

const TOKEN_KEY = 'tracesets.token';
const SCOPES_KEY = 'tracesets.scopes';

// The token's scopes, as /api/v1/whoami answered them, decide what the page offers; the
// service checks every request itself, so they only spare a person a certain refusal.
export const session = {
  token: () => sessionStorage.getItem(TOKEN_KEY),
  scopes: () => JSON.parse(sessionStorage.getItem(SCOPES_KEY) || 'null'),
  can: (scope) => (session.scopes() || []).includes(scope),
  remember: (scopes) => sessionStorage.setItem(SCOPES_KEY, JSON.stringify(scopes)),
  signIn: (token, scopes) => {
    sessionStorage.setItem(TOKEN_KEY, token);
    session.remember(scopes);
  },
  signOut: () => {
    sessionStorage.removeItem(TOKEN_KEY);
    sessionStorage.removeItem(SCOPES_KEY);
  },
};

let onUnauthorized = () => {};

/** Called with the service's message when a token is refused (it is then forgotten). */
export function whenUnauthorized(handler) {
  onUnauthorized = handler;
}

/** A problem-details answer, or a stand-in for one when the service could not be reached. */
export class ApiError extends Error {
  constructor(status, problem) {
    super(problem.detail || problem.title || `The service answered ${status}`);
    this.status = status;
    this.problem = problem;
    this.errors = Array.isArray(problem.errors) ? problem.errors : [];
  }
}

/**
 * Call the API. Resolves to {status, data, text} for a 2xx answer; rejects with an
 * ApiError otherwise (and for a refused token, signs out first).
 */
export async function call(path, { method = 'GET', body, token = session.token() } = {}) {
  const headers = { Accept: 'application/json' };
  if (token) headers.Authorization = `Bearer ${token}`;
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  let response;
  try {
    response = await fetch(path, {
      method, headers, body, cache: 'no-store', credentials: 'omit', redirect: 'error',
    });
  } catch (error) {
    throw new ApiError(0, { detail: `The service could not be reached (${error.message}).` });
  }
  const text = await response.text();
  let data = null;
  try {
    data = text ? JSON.parse(text) : null;
  } catch {
    data = null;
  }
  if (response.ok) return { status: response.status, data, text };
  const problem = data && typeof data === 'object' ? data : { detail: text.slice(0, 300) };
  const error = new ApiError(response.status, problem);
  if (response.status === 401 && token === session.token()) {
    session.signOut();
    onUnauthorized(error.message);
  }
  throw error;
}

export function query(params) {
  const search = new URLSearchParams();
  for (const [name, value] of Object.entries(params)) {
    if (value !== undefined && value !== null && value !== '') search.set(name, value);
  }
  const text = search.toString();
  return text ? `?${text}` : '';
}
