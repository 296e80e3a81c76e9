// The hookgate console: a list of recent requests kept live over a fetch
// stream, a request's detail with its runs, retry, replay and the playground.
// Request data is only ever put on the page as text (textContent), never as HTML.
const WHY = {
  matched: 'matched',
  path: 'no: path differs',
  source: 'no: payload.source differs',
  when: 'no: when condition is false',
  skipped: 'not tried (an earlier mapping matched)',
};
const TOKEN_KEY = 'hookgate-admin-token';
const MAX_ROWS = 1000;

// `pane`: bumped by whatever changes the detail pane (a selection, a replay's result), so a
// render started earlier, or a refresh a retry scheduled, never overwrites a later one.
// How often a detail pane showing an unfinished run reads it again.
const RUN_REFRESH_MS = 1000;
const RUN_REFRESH_MAX_MS = 15_000;

const state = {
  info: null,
  selected: null,
  filter: '',
  streamAbort: null,
  refetch: null,
  pane: 0,
  // The request the detail pane shows, as read (JSON), or null.
  shown: null,
};

// Characters that change how the text around them reads (bidi overrides, embeddings, isolates
// and marks) or hide text (zero-width characters, tag characters models read as letters,
// controls but tab, newline and carriage return) are shown as \u{…} escapes: the console shows
// what the agent gets, not a disguise of it (a U+202E made "pay \u202emoc.live@ot" read as
// "pay to@evil.com").
// Every invisible character counts (Unicode's default-ignorables and format characters: soft
// hyphen, variation selectors, Hangul fillers...), as the wrapper's "must not be blank" rule
// reads them: each width 0, "pay<U+3164>bob" read as "paybob".
const DISGUISING =
  // biome-ignore lint/suspicious/noControlCharactersInRegex: matching controls is the point.
  /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f\u2028\u2029\p{Default_Ignorable_Code_Point}\p{Cf}]/gu;

// Combining marks past this many on one letter (Unicode's stream-safe limit) are counted, not
// drawn: Chromium lays out a letter's marks in time that grows with their square (120,000 on
// one letter, 240 KB of text, held the tab for seconds at each refresh), and piled marks draw
// over the rows around them.
const MARK_PILE = /(\p{M}{30})\p{M}+/gu;

/** Text as it is put on the page: disguising characters made visible, piled marks counted. */
function visible(text) {
  return text
    .replace(MARK_PILE, (pile, kept) => `${kept}(+${[...pile].length - 30} marks)`)
    .replace(DISGUISING, (char) => `\\u{${char.codePointAt(0).toString(16)}}`);
}

// A run of characters with no place to break a line gets one (a <wbr>, which adds nothing to the
// text read or copied) at the first grapheme boundary past 64 characters: Chromium lays out such
// a run in time that grows with its square in some scripts (60,000 emoji skin-tone modifiers,
// 240 KB, held the tab for minutes; an Arabic word of 120,000 letters for seconds). Never inside
// a grapheme (an emoji and its skin tone, a flag's two letters, a letter and its marks) nor a
// \u{…} escape, unless 128 characters pass without a boundary: 60,000 skin-tone modifiers after
// one emoji are one grapheme, and must wrap all the same.
const RUN_WRAP = 64;
const RUN_WRAP_ALWAYS = 128;
const LONG_RUN = /[^ \t\n\r]{64}/u;
const BREAKS_LINE = /^[ \t\n\r]+$/;
const ESCAPE = /\\u\{[0-9a-f]+\}/y;
const GRAPHEMES = new Intl.Segmenter(undefined, { granularity: 'grapheme' });

/** Text as nodes to append: visible(), with a break opportunity in every long run. */
function breakable(text) {
  const shown = visible(text);
  if (!LONG_RUN.test(shown)) return [shown];
  const pieces = [];
  let from = 0; // where the text not yet in pieces starts
  let run = 0; // characters since the last place a line may break
  let escapeEnd = 0; // where the escape being read ends: no break before it
  const wrapAt = (at) => {
    pieces.push(shown.slice(from, at), document.createElement('wbr'));
    from = at;
    run = 0;
  };
  for (const { segment, index } of GRAPHEMES.segment(shown)) {
    if (BREAKS_LINE.test(segment)) {
      run = 0;
      continue;
    }
    if (index >= escapeEnd) {
      if (run >= RUN_WRAP) wrapAt(index);
      if (segment === '\\') {
        ESCAPE.lastIndex = index;
        if (ESCAPE.test(shown)) escapeEnd = ESCAPE.lastIndex;
      }
    }
    let at = index;
    for (const char of segment) {
      if (run >= RUN_WRAP_ALWAYS) wrapAt(at);
      run += 1;
      at += char.length;
    }
  }
  pieces.push(shown.slice(from));
  return pieces;
}

/** An element with attributes and children; strings become text (breakable()). */
function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs ?? {})) {
    if (value === undefined || value === null || value === false) continue;
    if (name === 'onclick') el.addEventListener('click', value);
    else if (name === 'class') el.className = value;
    else el.setAttribute(name, value === true ? '' : String(value));
  }
  for (const child of children.flat()) {
    if (child === undefined || child === null || child === false) continue;
    if (typeof child === 'string' || typeof child === 'number')
      el.append(...breakable(String(child)));
    else el.append(child);
  }
  return el;
}

function $(id) {
  return document.getElementById(id);
}

// The token: from a #token= fragment once (never a query string: those reach logs), then the tab's sessionStorage.
function readToken() {
  const match = /^#token=(.+)$/.exec(location.hash);
  if (match) {
    // Gone from the address bar first, whatever the rest does.
    history.replaceState(null, '', location.pathname);
    let token = match[1];
    try {
      token = decodeURIComponent(token);
    } catch {
      // Not percent-encoding (`50%-off`): the text as it is.
    }
    sessionStorage.setItem(TOKEN_KEY, token);
  }
  return sessionStorage.getItem(TOKEN_KEY);
}

async function api(path, options = {}) {
  const headers = { ...(options.headers ?? {}) };
  const token = sessionStorage.getItem(TOKEN_KEY);
  if (token) headers.authorization = `Bearer ${token}`;
  const response = await fetch(path, { ...options, headers, cache: 'no-store' });
  if (response.status === 401) {
    showLogin(token ? 'The token was refused.' : undefined);
    throw new Error('unauthorized');
  }
  const body = await response.json().catch(() => null);
  return { status: response.status, body };
}

function post(path, value) {
  return api(path, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(value ?? {}),
  });
}

function showLogin(message) {
  stopStream();
  // Nothing selected any more: a run followed in the detail is no longer read, and the pane
  // shows no request (its Retry would act on one no longer selected).
  state.pane += 1;
  state.selected = null;
  state.shown = null;
  $('detail').replaceChildren(h('p', { class: 'muted' }, 'Select a request.'));
  $('login').hidden = false;
  $('requests-view').hidden = true;
  $('playground-view').hidden = true;
  $('logout').hidden = true;
  $('tabs').hidden = true;
  const error = $('login-error');
  error.hidden = !message;
  error.textContent = message ?? '';
}

function showView(name) {
  for (const tab of document.querySelectorAll('.tab')) {
    if (tab.dataset.view === name) tab.setAttribute('aria-current', 'page');
    else tab.removeAttribute('aria-current');
  }
  $('requests-view').hidden = name !== 'requests';
  $('playground-view').hidden = name !== 'playground';
}

async function open() {
  const { status, body } = await api('/api/info');
  if (status !== 200) return showLogin('The console is not available.');
  state.info = body;
  $('login').hidden = true;
  $('tabs').hidden = false;
  $('logout').hidden = !sessionStorage.getItem(TOKEN_KEY);
  showView('requests');
  // The stream first: what it brings (or another tab passes on) while the list is read is
  // merged into it, not lost between the two.
  startStream();
  await loadList();
}

// ---- the list ----

function statusClass(status) {
  if (status >= 500) return 's5';
  if (status >= 400) return 's4';
  if (status === 204) return 's204';
  return 's2';
}

function row(summary) {
  const tr = h(
    'tr',
    {
      'data-id': summary.id,
      tabindex: '0',
      class: summary.id === state.selected ? 'selected' : '',
    },
    h('td', { class: 'time' }, new Date(summary.time).toLocaleTimeString()),
    h('td', {}, summary.hook || '(none)'),
    h('td', {}, h('span', { class: `status ${statusClass(summary.status)}` }, summary.status)),
    h('td', { class: 'code' }, summary.code ?? ''),
    h('td', {}, summary.mappingId ?? ''),
  );
  tr.addEventListener('click', () => select(summary.id));
  tr.addEventListener('keydown', (event) => {
    if (event.key === 'Enter') select(summary.id);
  });
  return tr;
}

function render(requests, empty = 'No requests yet.') {
  // Rows still to be drawn are in this list, or merged after it (mergeLive).
  live.undrawn = [];
  $('request-rows').replaceChildren(...requests.map(row));
  $('empty').textContent = empty;
  $('empty').hidden = requests.length > 0;
}

// The latest rows the stream brought, numbered: a list read while they came is a snapshot from
// before some of them, and they are put back on top of it rather than lost. `undrawn`: rows to
// put on top at the next redraw, oldest first.
// `covered`: the last row (its seq) that came before the read shown began, so is in it if it
// matches; `wanted`: the last row that may match the filter set when it came (mayMatch).
const live = {
  seq: 0,
  recent: [],
  reads: 0,
  shown: 0,
  shownFilter: '',
  covered: Number.NEGATIVE_INFINITY,
  wanted: 0,
  undrawn: [],
  drawing: 0,
  drawnAt: Number.NEGATIVE_INFINITY,
};
// Streamed rows are drawn at most this often.
const LIVE_DRAW_MS = 250;

async function loadList() {
  const from = live.seq;
  const filter = state.filter;
  const generation = ++live.reads;
  let answer = null;
  try {
    answer = await api(`/api/requests${filter ? `?${filter}` : ''}`);
  } catch {
    // Refused (the login is shown) or not answered: taken as a failed read below.
  }
  // Reads answer in any order (a filter set or cleared, a stream back while one is in flight).
  // One for a filter no longer set is not shown; nor, for the filter shown, an older one over a
  // newer one. A failed read (no list in its answer) shows nothing, but never leaves another
  // filter's rows under this one.
  if (filter !== state.filter) return;
  const requests =
    answer?.status === 200 && Array.isArray(answer.body?.requests) ? answer.body.requests : null;
  if (requests === null) {
    // A filter the server cannot use (a status such as "40"): it says which, and why.
    const refused = answer?.status === 400 ? answer.body?.error?.detail : undefined;
    if (typeof refused === 'string') {
      live.shownFilter = filter;
      live.shown = generation;
      live.covered = from;
      render([], visible(`The filter is refused: ${refused}.`));
      return;
    }
    if (live.shownFilter !== filter) {
      // Emptied, not shown: any read for this filter that succeeds is shown over it. Unfiltered,
      // what the stream brought since the read began is still shown.
      live.shownFilter = filter;
      live.shown = 0;
      live.covered = Number.NEGATIVE_INFINITY;
      render([], 'The list could not be read (it is read again when the stream comes back).');
      if (!filter) mergeLive(from, new Set());
    }
    return;
  }
  if (live.shownFilter === filter && generation < live.shown) return;
  live.shownFilter = filter;
  live.shown = generation;
  live.covered = from;
  render(requests);
  if (!filter) mergeLive(from, new Set(requests.map((summary) => summary.id)));
}

/** The rows the stream brought since `from` that `listed` lacks, put on top, oldest first. */
function mergeLive(from, listed) {
  prependRows(
    live.recent
      .filter(({ seq, summary }) => seq > from && !listed.has(summary.id))
      .map(({ summary }) => summary),
  );
}

/**
 * Put rows (oldest first) on top of the list in one insertion, the newest on top, skipping any
 * listed already (a list read and the stream can both bring one, in either order).
 */
function prependRows(summaries) {
  const rows = $('request-rows');
  const listed = new Set();
  for (const tr of rows.children) listed.add(tr.dataset.id);
  const added = document.createDocumentFragment();
  // Only the newest MAX_ROWS: older ones would be pushed out at once.
  for (let i = summaries.length - 1; i >= 0 && added.childNodes.length < MAX_ROWS; i--) {
    const summary = summaries[i];
    if (listed.has(summary.id)) continue;
    listed.add(summary.id);
    added.append(row(summary));
  }
  if (!added.childNodes.length) return;
  rows.prepend(added);
  if (rows.children.length > MAX_ROWS) {
    const beyond = document.createRange();
    beyond.setStartBefore(rows.children[MAX_ROWS]);
    beyond.setEndAfter(rows.lastElementChild);
    beyond.deleteContents();
  }
  $('empty').hidden = true;
}

const LIST_FILTER_KEYS = ['route', 'status', 'session', 'state', 'q', 'authenticated'];

/**
 * Whether a streamed row may be listed under `filter` (a list query string), judged from its
 * summary as the server's filter reads the record: false only when it never can be. A filter
 * the summary does not settle (a run state, which changes later, of a request with actions;
 * a search by id) counts as a match: the list is read again. Pure.
 */
function mayMatch(summary, filter) {
  const params = new URLSearchParams(filter);
  const wanted = {};
  for (const key of LIST_FILTER_KEYS) {
    if (params.getAll(key).length > 1) return true;
    // As the server reads it: trimmed, bounded; blank is not set.
    const value = params.get(key)?.trim().slice(0, 256);
    if (value) wanted[key] = value;
  }
  // `q` is left to the server: under a search by id alone, each batch reads the list again.
  const { route, status, session, state: runState, authenticated } = wanted;
  const sessions = Array.isArray(summary.sessions) ? summary.sessions : null;
  const actionIds = Array.isArray(summary.actionIds) ? summary.actionIds : null;
  if (route !== undefined && summary.hook !== route && summary.route !== route) return false;
  if (
    (authenticated === 'true' || authenticated === 'false') &&
    typeof summary.authenticated === 'boolean' &&
    summary.authenticated !== (authenticated === 'true')
  )
    return false;
  if (status !== undefined && typeof summary.status === 'number') {
    const range = /^([1-5])xx$/i.exec(status);
    if (range && Math.floor(summary.status / 100) !== Number(range[1])) return false;
    if (/^[1-5][0-9]{2}$/.test(status) && String(summary.status) !== status) return false;
  }
  if (session !== undefined && sessions && !sessions.some((key) => key.includes(session)))
    return false;
  // A request with no action never has a run, whatever state is asked for.
  if (runState !== undefined && actionIds && actionIds.length === 0) return false;
  return true;
}

/** Rows the stream brought (oldest first): put on top soon, or a filtered list read again. */
function addLive(summaries) {
  for (const summary of summaries) live.recent.push({ seq: ++live.seq, summary });
  if (live.recent.length > MAX_ROWS) live.recent.splice(0, live.recent.length - MAX_ROWS);
  // Under a filter the server decides what matches (run states live in the store): ask again.
  // So too while another filter's rows are shown (an unfiltered read is on its way, and merges
  // these rows, which came after it began).
  // At most one read per 250 ms, due from the first request it follows: put off again by each
  // new one, a read never came while requests kept arriving less than 250 ms apart.
  // None while the list shown is this filter's and no row it lacks may match: read again for
  // each batch of a flood of refusals, `authenticated=true` cost a list read every 250 ms.
  if (state.filter || live.shownFilter !== '') {
    if (summaries.some((summary) => mayMatch(summary, state.filter))) live.wanted = live.seq;
    if (live.shownFilter === state.filter && live.covered >= live.wanted) return;
    state.refetch ??= setTimeout(() => {
      state.refetch = null;
      void loadList();
    }, 250);
    return;
  }
  // Drawn together, at most once per frame and LIVE_DRAW_MS (the first after a quiet spell at
  // the next frame): drawn one by one, a flood of a thousand refused requests a second kept the
  // tab too busy to answer for seconds, and each redraw lays out the whole list.
  live.undrawn = live.undrawn.concat(summaries).slice(-MAX_ROWS);
  if (live.drawing) return;
  const wait = Math.max(0, live.drawnAt + LIVE_DRAW_MS - performance.now());
  live.drawing = setTimeout(() => requestAnimationFrame(drawLive), wait);
}

function drawLive() {
  live.drawing = 0;
  live.drawnAt = performance.now();
  const summaries = live.undrawn;
  live.undrawn = [];
  // A filter shown since: the unfiltered read that follows it merges these rows.
  if (state.filter || live.shownFilter !== '') return;
  prependRows(summaries);
}

// ---- the live stream: fetch, so the token goes in a header (EventSource cannot send one) ----
//
// One stream per browser, not per tab: a browser opens at most six connections to one host, and
// a stream held open by each of six tabs left none for anything else (every click waited). The
// tab holding a Web Lock reads the stream and passes what comes to the others of this browser
// over a BroadcastChannel; when it closes, a waiting tab takes the lock and the stream.

const STREAM_LOCK = 'hookgate-console-stream';
const shared = 'BroadcastChannel' in window ? new BroadcastChannel('hookgate-console') : null;
const canShare = Boolean(shared && navigator.locks);
let holding = false;
let liveNow = false;

function stopStream() {
  // The others wait for the next tab to take the stream, and read their list again then.
  tell({ kind: 'live', on: false });
  state.streamAbort?.abort();
  state.streamAbort = null;
  setLive(false);
}

function setLive(on) {
  // Back after a drop or a restart underneath: what came meanwhile (or the new process's list)
  // is read again, not only what the stream brings from now on.
  if (on && !liveNow) void loadList();
  liveNow = on;
  $('live').textContent = on ? 'live' : 'offline';
  $('live').classList.toggle('on', on);
}

// What the holding tab tells the others: the requests each read brought, and whether the
// stream is live.
function tell(message) {
  if (holding) shared?.postMessage(message);
}

shared?.addEventListener('message', (event) => {
  const message = event.data;
  // A tab logged out, or not logged in, shows nothing; the holder answers a newcomer's hello.
  if (!state.streamAbort) return;
  if (message?.kind === 'hello') tell({ kind: 'live', on: liveNow });
  else if (holding) return;
  else if (message?.kind === 'live') setLive(message.on === true);
  else if (message?.kind === 'requests' && Array.isArray(message.summaries))
    addLive(message.summaries);
});

function startStream() {
  stopStream();
  const abort = new AbortController();
  state.streamAbort = abort;
  if (!canShare) {
    void readStream(abort);
    return;
  }
  // Waits while another tab of this browser holds the stream; its events come over the channel.
  navigator.locks
    .request(STREAM_LOCK, { signal: abort.signal }, async () => {
      holding = true;
      // Taking over from a tab that closed: every tab reads what came between its stream and
      // this one once this one is live.
      setLive(false);
      tell({ kind: 'live', on: false });
      try {
        await readStream(abort);
      } finally {
        holding = false;
      }
    })
    .catch(() => {
      // Aborted while waiting (logged out): nothing to do.
    });
  shared.postMessage({ kind: 'hello' });
}

/** Read the stream until `abort`, reconnecting after a drop. */
async function readStream(abort) {
  while (state.streamAbort === abort) {
    const headers = {};
    const token = sessionStorage.getItem(TOKEN_KEY);
    if (token) headers.authorization = `Bearer ${token}`;
    try {
      const response = await fetch('/api/stream', { headers, signal: abort.signal });
      if (response.status === 401) {
        showLogin('The token was refused.');
        return;
      }
      if (!response.ok || !response.body) throw new Error(`stream: ${response.status}`);
      setLive(true);
      tell({ kind: 'live', on: true });
      const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
      let buffer = '';
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        // What one read brings (the server sends a batch at a time) is passed on at once.
        const events = (buffer + value).split('\n\n');
        buffer = events.pop();
        const summaries = [];
        for (const event of events) {
          for (const line of event.split('\n')) {
            if (line.startsWith('data: ')) summaries.push(JSON.parse(line.slice(6)));
          }
        }
        if (summaries.length) {
          addLive(summaries);
          tell({ kind: 'requests', summaries });
        }
      }
    } catch {
      // Aborted or dropped: reconnect below unless this stream was replaced.
    }
    if (state.streamAbort !== abort) return;
    setLive(false);
    tell({ kind: 'live', on: false });
    await new Promise((resolve) => setTimeout(resolve, 2000));
  }
}

// ---- a request's detail ----

// `refresh`: a read of the request shown (its run followed); one that brings what is shown
// already leaves the pane as it is. Drawn again every second, a large body kept the tab busy
// for as long as the run lasted, and a selection made in the pane was lost at each read.
async function select(id, refresh = false) {
  const version = ++state.pane;
  state.selected = id;
  for (const tr of $('request-rows').children)
    tr.classList.toggle('selected', tr.dataset.id === id);
  const { status, body } = await api(`/api/requests/${encodeURIComponent(id)}`);
  if (version !== state.pane) return;
  const pane = $('detail');
  if (status !== 200) {
    state.shown = null;
    pane.replaceChildren(h('p', { class: 'error' }, 'This request is no longer in the journal.'));
    return;
  }
  const shown = JSON.stringify(body.request);
  if (!refresh || shown !== state.shown) pane.replaceChildren(...detail(body.request).flat());
  state.shown = shown;
  // A run still queued or running is shown as it goes on (a retry's, or one just accepted), as
  // long as the same request stays selected and nothing else changed the pane.
  const runs = Object.values(body.request.runs ?? {});
  if (runs.some((run) => run && (run.state === 'queued' || run.state === 'running')))
    followRun(id, RUN_REFRESH_MS);
}

/** Read the selected request again after `delayMs`; a failed read is tried again, less often. */
function followRun(id, delayMs) {
  const version = state.pane;
  setTimeout(() => {
    if (state.pane !== version || state.selected !== id) return;
    select(id, true).catch(() => followRun(id, Math.min(delayMs * 2, RUN_REFRESH_MAX_MS)));
  }, delayMs);
}

function facts(pairs) {
  return h(
    'dl',
    { class: 'facts' },
    pairs
      .filter(([, value]) => value !== undefined && value !== null && value !== '')
      .flatMap(([name, value]) => [h('dt', {}, name), h('dd', {}, String(value))]),
  );
}

function traceTable(trace) {
  if (!trace.length) return h('p', { class: 'muted' }, 'No mappings were tried.');
  return h(
    'table',
    { class: 'trace' },
    h('thead', {}, h('tr', {}, h('th', {}, 'mapping'), h('th', {}, 'outcome'))),
    h(
      'tbody',
      {},
      trace.map((t) =>
        h(
          'tr',
          { class: t.outcome === 'matched' ? 'matched' : '' },
          h('td', {}, t.mappingId),
          h('td', {}, WHY[t.outcome] ?? t.outcome),
        ),
      ),
    ),
  );
}

function runBlock(actionId, run) {
  if (!state.info?.runtime) return h('p', { class: 'muted' }, 'The runtime is off: no runs.');
  if (!run) return h('p', { class: 'muted' }, 'No run stored for this action.');
  const block = h(
    'div',
    { class: 'run' },
    h('span', { class: `state ${run.state}` }, run.state),
    facts([
      ['attempts', run.attempts],
      ['outcome', run.status],
      ['started', run.startedAt],
      ['finished', run.finishedAt],
      ['reason', run.reason],
      [
        'delivery',
        run.delivery &&
          `${run.delivery.state}${run.delivery.channel ? ` via ${run.delivery.channel}` : ''}${run.delivery.reason ? `: ${run.delivery.reason}` : ''}`,
      ],
    ]),
    run.reply !== undefined && h('h5', {}, 'Reply'),
    run.reply !== undefined && h('pre', { class: 'text' }, run.reply),
  );
  if (run.state === 'dead' || run.state === 'failed') {
    const note = h('span', { class: 'note' });
    const button = h('button', { type: 'button', class: 'retry' }, 'Retry');
    button.addEventListener('click', async () => {
      button.disabled = true;
      // The pane as it is now: a selection made during the post is not refreshed over.
      const version = state.pane;
      const { status, body } = await post(`/api/runs/${encodeURIComponent(actionId)}/retry`);
      note.textContent = visible(
        status === 200
          ? 'queued again'
          : (body?.error?.detail ?? body?.error?.message ?? 'refused'),
      );
      // Shown again shortly (the run queued), unless the pane changed meanwhile.
      if (status === 200)
        setTimeout(() => {
          if (state.pane === version && state.selected) select(state.selected);
        }, 300);
      else button.disabled = false;
    });
    block.append(h('div', { class: 'actions-bar' }, button, note));
  }
  return block;
}

function actionBlock(action, run) {
  return h(
    'section',
    { class: 'action' },
    h('h4', {}, `${action.kind} action `, h('code', {}, action.id)),
    facts([
      ['agent', action.agentId],
      ['session', action.sessionKey],
      ['wrapped', action.wrapped ? 'yes (untrusted content)' : 'no (trusted mapping)'],
      ['injection patterns', action.patterns?.length ? action.patterns.join(', ') : undefined],
    ]),
    h('h5', {}, 'Prompt as the agent gets it', action.truncated ? ' (truncated)' : ''),
    h('pre', { class: 'text prompt' }, action.prompt),
    h('h5', {}, 'Run'),
    runBlock(action.id, run),
  );
}

function payloadBlock(request) {
  if (!request.payload) {
    return h(
      'p',
      { class: 'muted' },
      state.info?.keepPayloads
        ? 'The body was not kept (refused before it was read, or dropped to stay within bounds).'
        : 'Bodies are not kept (admin.keepPayloads is off).',
    );
  }
  const result = h('div', { class: 'result' });
  const button = h('button', { type: 'button' }, 'Replay as a dry run');
  button.addEventListener('click', async () => {
    button.disabled = true;
    // The result is what the user asked for: a refresh of this request scheduled before must
    // not wipe it. Another request being selected meanwhile still shows (it was asked later).
    if (state.selected === request.id) state.pane++;
    const { status, body } = await post(`/api/requests/${encodeURIComponent(request.id)}/replay`);
    button.disabled = false;
    result.replaceChildren(
      ...(status === 200
        ? dryRunResult(body)
        : [h('p', { class: 'error' }, body?.error?.message ?? 'refused')]),
    );
  });
  const headers = Object.entries(request.payload.headers);
  return h(
    'div',
    {},
    h('h5', {}, 'Headers (credentials removed)'),
    h('pre', { class: 'text' }, headers.map(([k, v]) => `${k}: ${v}`).join('\n')),
    request.payload.query && facts([['query', request.payload.query]]),
    h('h5', {}, 'Body', request.payload.truncated ? ' (truncated)' : ''),
    h('pre', { class: 'text body' }, request.payload.body),
    h('div', { class: 'actions-bar' }, button),
    result,
  );
}

function detail(request) {
  const v = request.verification;
  return [
    h(
      'h2',
      {},
      `${request.method} ${request.hook || '(no hook)'} `,
      h('span', { class: `status ${statusClass(request.status)}` }, request.status),
    ),
    facts([
      ['request id', request.id],
      ['time', request.time],
      ['route', request.route === '' ? '(catch-all)' : request.route],
      ['error code', request.code],
      [
        'caller',
        request.authenticated ? 'authenticated' : 'not authenticated (answered before it was)',
      ],
      ['client', request.client],
      ['duration', `${request.durationMs} ms`],
      ['matched mapping', request.mappingId],
      [
        'verified by',
        v && `${v.scheme}${v.secretIndex !== undefined ? ` (secret #${v.secretIndex})` : ''}`,
      ],
      ['delivery id', v?.deliveryId],
      ['replayed', request.replayed ? 'yes (answered from an earlier acceptance)' : undefined],
    ]),
    h('h3', {}, 'Mappings, in order'),
    traceTable(request.trace),
    h('h3', {}, `Actions (${request.actions.length})`),
    request.actions.length
      ? request.actions.map((a) => actionBlock(a, request.runs[a.id]))
      : h('p', { class: 'muted' }, 'No actions were built.'),
    h('h3', {}, 'Payload'),
    payloadBlock(request),
  ];
}

// ---- dry-run results (playground and replay), the shape of `hookgate test --json` ----

function dryRunResult(answer) {
  const result = answer.result;
  const parts = [
    h(
      'h3',
      {},
      'Dry run: ',
      h('span', { class: `status ${statusClass(result.status)}` }, result.status),
    ),
  ];
  if (answer.note) parts.push(h('p', { class: 'note' }, answer.note));
  if (result.error)
    parts.push(h('p', { class: 'error' }, `${result.error.code}: ${result.error.message}`));
  else if (result.status === 204)
    parts.push(h('p', {}, 'No mapping matched; nothing would be stored.'));
  parts.push(
    facts([
      ['matched mapping', result.mappingId],
      ['verified by', result.verification?.scheme],
      ['delivery id', result.verification?.deliveryId],
      ['replay key', result.replayKey],
    ]),
  );
  if (result.trace.length) parts.push(h('h4', {}, 'Mappings, in order'), traceTable(result.trace));
  for (const [i, action] of result.actions.entries()) {
    parts.push(
      h('h4', {}, `Action ${i + 1} (${action.kind})`),
      facts([
        ['agent', action.agentId],
        ['session key', action.sessionKey && `${action.sessionKey} (${action.sessionKeySource})`],
        ['model', action.kind === 'agent' ? (action.model ?? '(agent default)') : undefined],
        [
          'delivery',
          action.kind === 'agent'
            ? action.deliver
              ? `${action.channel}${action.to ? ` to ${action.to}` : ''}`
              : 'off'
            : undefined,
        ],
        [
          'safety',
          action.safety
            ? `wrapped as ${action.safety.label}; patterns: ${action.safety.patterns.join(', ') || 'none'}`
            : 'NOT wrapped (allowUnsafeExternalContent)',
        ],
      ]),
      h('pre', { class: 'text prompt' }, action.prompt ?? action.message ?? action.text ?? ''),
    );
  }
  parts.push(
    h(
      'details',
      {},
      h('summary', {}, 'JSON'),
      h('pre', { class: 'text' }, JSON.stringify(result, null, 2)),
    ),
  );
  return parts;
}

function parseHeaders(text) {
  const headers = {};
  for (const line of text.split('\n')) {
    const at = line.indexOf(':');
    if (at > 0) headers[line.slice(0, at).trim().toLowerCase()] = line.slice(at + 1).trim();
  }
  return headers;
}

async function runPlayground(event) {
  event.preventDefault();
  const form = new FormData(event.target);
  const out = $('playground-result');
  out.replaceChildren(h('p', { class: 'muted' }, 'Running…'));
  const { status, body } = await post('/api/playground', {
    hook: String(form.get('hook')),
    query: String(form.get('query') ?? ''),
    headers: parseHeaders(String(form.get('headers') ?? '')),
    payload: String(form.get('payload') ?? ''),
    sign: form.get('sign') === 'on',
  });
  out.replaceChildren(
    ...(status === 200
      ? dryRunResult(body)
      : [h('p', { class: 'error' }, body?.error?.detail ?? body?.error?.message ?? 'refused')]),
  );
}

// ---- start ----

document.addEventListener('DOMContentLoaded', () => {
  for (const tab of document.querySelectorAll('.tab')) {
    tab.addEventListener('click', () => showView(tab.dataset.view));
  }
  $('login-form').addEventListener('submit', (event) => {
    event.preventDefault();
    sessionStorage.setItem(TOKEN_KEY, $('login-token').value);
    $('login-token').value = '';
    open().catch(() => undefined);
  });
  $('logout').addEventListener('click', () => {
    sessionStorage.removeItem(TOKEN_KEY);
    showLogin();
  });
  $('filters').addEventListener('submit', (event) => {
    event.preventDefault();
    const params = new URLSearchParams();
    for (const [key, value] of new FormData(event.target))
      if (value) params.set(key, String(value));
    state.filter = params.toString();
    loadList();
  });
  $('filters').addEventListener('reset', () => {
    state.filter = '';
    setTimeout(loadList, 0);
  });
  $('playground').addEventListener('submit', (event) => {
    runPlayground(event).catch(() => undefined);
  });
  readToken();
  open().catch(() => undefined);
});
