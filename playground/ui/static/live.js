// The page side of the live channel (playground/ui/live_feed.py): follow a run's feed when the
// page starts one, and write what arrives straight into the page -- never through Gradio.
// And the stage's Run and Stop (playground/ui/run_route.py): a click goes straight to the
// app's own route; the controls' values got there before, each hand-over numbered (qllPlan),
// except the prompt's text, which the click sends along.
//
// Element ids come from playground/ui/ids.py as window.qllIds. One message (a Server-Sent
// Event's data, JSON) holds any of:
//   text      [[element id, start, piece], ...]  text appended to an answer/reasoning box
//   status    {column: html}                     each column's live status line
//   headline  html                               the presenter's headline row
//   timeline  html (svg)                         the token timeline
//   bars      html (svg)                         the latency bars (the run's last message)
//   replay    label or ''                        a replay's label ('' for a live run): the
//                                                connection line says the numbers are recorded
//   end       true                               the run is over
//   handover  true                               (with end) a stage Run: fetch its results
//   sent_at   seconds (wall clock)               only from an instrumented app (benchmarks)
(() => {
  const ids = window.qllIds;
  const HANDOVER_WAIT_MS = 1000;  // the longest a click waits for an edited control's hand-over
  const views = {headline: ids.headline, timeline: ids.timeline, bars: ids.bars};
  const put = (id, html) => {
    const e = document.getElementById(id);
    old.delete(id);
    if (e) e.innerHTML = html;
  };
  const boxes = `[id^="${ids.answer}"] textarea, [id^="${ids.reasoning}"] textarea`;
  const finals = `[id^="${ids.metrics}"], [id^="${ids.badge}"], [id^="${ids.phases}"]`;
  // What a new run replaces, at the click: the answer boxes are emptied (their size is fixed);
  // the markup (status lines, headline, timeline, bars) only fades -- emptying it would change
  // its height and make the browser lay out and paint the whole page in the very frame that
  // should show the first text. The run's own markup replaces it; what the run never redrew is
  // emptied at its end.
  const old = new Set();
  const clear = () => {
    for (const id of Object.keys(html)) delete html[id];
    painted = false;
    clickedAt = performance.now();
    late.clear();
    document.querySelectorAll(boxes).forEach((t) => {
      t.value = ''; t.dataset.away = '0'; t.dataset.writtenAt = '0';
    });
    const markup = [...document.querySelectorAll('.live-status')].map((e) => e.id)
      .concat(Object.values(views));
    for (const id of markup) {
      const e = document.getElementById(id);
      if (e && e.innerHTML) { e.classList.add('stale'); old.add(id); }
    }
    document.querySelectorAll(finals).forEach((e) => e.classList.add('stale'));
  };
  new MutationObserver((ms) => ms.forEach((m) => {  // Gradio drew the new value
    const e = m.target.nodeType === 1 ? m.target : m.target.parentElement;
    const c = e && e.closest('.stale');
    if (c) c.classList.remove('stale');
  })).observe(document.documentElement, {subtree: true, childList: true, characterData: true});
  const abc = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-';
  const rnd = new Uint8Array(18);
  crypto.getRandomValues(rnd);
  const page = Array.from(rnd, (x) => abc[x % 64]).join('');
  let text = {};
  // What a message changes is written without reading any geometry (a read after a write makes
  // the browser lay out the whole page there and then): text goes into its box at once and a
  // box follows its end in the next frame, unless its reader scrolled up. Markup (status lines,
  // headline, timeline: laid out and painted, costly on a small machine) is drawn at most every
  // MARKUP_MS, and the first markup of a run only after its first text is painted (or
  // FIRST_MARKUP_MS after the click, for a run with no text yet): the audience's first
  // characters never wait behind a redraw of the rest.
  const MARKUP_MS = 200;
  const FIRST_MARKUP_MS = 300;
  let frame = null;
  let markupAt = 0;
  let painted = false;  // this run's first text is on screen
  let clickedAt = 0;
  const html = {};
  const follow = new Set();
  const drawMarkup = (end = false) => {
    for (const [id, markup] of Object.entries(html)) put(id, markup);
    for (const id of Object.keys(html)) delete html[id];
    if (end) for (const id of [...old]) put(id, '');  // the last run's, never redrawn by this one
    markupAt = performance.now();
  };
  const flush = () => {
    frame = null;
    for (const box of follow) if (box.dataset.away !== '1') box.scrollTop = 1e9;
    if (follow.size) painted = true;
    follow.clear();
    if (!Object.keys(html).length) return;
    const now = performance.now();
    if ((painted || now - clickedAt >= FIRST_MARKUP_MS) && now - markupAt >= MARKUP_MS) {
      drawMarkup();
    }
    else soon();
  };
  const soon = () => { if (frame === null) frame = requestAnimationFrame(flush); };
  // A box's text is rewritten whole (a textarea has no cheaper append), and the browser lays
  // the whole text out again each time: past LONG_TEXT characters a box is rewritten at most
  // every LONG_TEXT_MS, the newest text kept meanwhile (`late`). Rewriting two 8,000-token
  // answers every 30 ms kept a small machine's main thread so busy that Stop did not take a
  // click for 30 s. The first text of a run, and every short answer, is written at once.
  const LONG_TEXT = 4000;
  const LONG_TEXT_MS = 250;
  const late = new Map();  // box -> its newest text, not yet written
  let lateTimer = null;
  const putText = (box, full) => {
    late.delete(box);
    if (box.value !== full) {
      box.value = full;
      box.dataset.writtenAt = String(performance.now());
      follow.add(box);
      soon();
    }
  };
  const writeLate = () => {
    if (lateTimer !== null) clearTimeout(lateTimer);
    lateTimer = null;
    for (const [box, full] of [...late]) putText(box, full);
  };
  const write = (box, full) => {
    const since = performance.now() - Number(box.dataset.writtenAt || 0);
    if (full.length <= LONG_TEXT || since >= LONG_TEXT_MS) {
      putText(box, full);
      return;
    }
    late.set(box, full);
    if (lateTimer === null) lateTimer = setTimeout(writeLate, LONG_TEXT_MS - since);
  };
  document.addEventListener('scroll', (e) => {  // a reader scrolling a box up stays there
    const box = e.target;
    if (box instanceof HTMLTextAreaElement && box.matches(boxes)) {
      box.dataset.away = box.scrollTop + box.clientHeight < box.scrollHeight - 4 ? '1' : '0';
    }
  }, {capture: true, passive: true});
  const onmessage = (m) => {
    const d = JSON.parse(m.data);
    if (d.end) {  // a value Gradio redraws unchanged is not a mutation: unfade it anyway
      setTimeout(() => document.querySelectorAll('.stale').forEach(
        (e) => e.classList.remove('stale')), 1500);
    }
    if (d.sent_at !== undefined) {  // an instrumented app (benchmarks/ui_fidelity) only
      const log = window.qllFeedLog || (window.qllFeedLog = []);
      if (log.length < 5000) log.push([performance.timeOrigin + performance.now(), d.sent_at]);
    }
    for (const [id, start, piece] of (d.text || [])) {
      const full = (text[id] || '').slice(0, start) + piece;
      text[id] = full;
      const box = document.querySelector('#' + id + ' textarea');
      if (box) write(box, full);
    }
    if (typeof d.replay === 'string') {  // the connection line (#server-status, Gradio's)
      const c = document.getElementById(ids.connection);
      if (c && (c.dataset.replay || '') !== d.replay) {
        if (d.replay) c.dataset.replay = d.replay;
        else delete c.dataset.replay;
      }
    }
    for (const [col, markup] of Object.entries(d.status || {})) html[ids.status + col] = markup;
    for (const [k, id] of Object.entries(views)) if (k in d) html[id] = d[k];
    if (d.end) {  // the run's last word is drawn now, and every box's whole text
      writeLate();
      drawMarkup(true);
      stoppable(false);
    }
    if (d.handover) {  // the finished results, drawn once by Gradio
      const b = document.getElementById(ids.handover);
      if (b) b.click();
    }
    soon();
  };
  let wait = 500;
  const connect = () => {  // one stream per page, opened now, not at the click
    const es = new EventSource(base() + ids.liveRoute + page);
    es.onopen = () => { wait = 500; };
    es.onmessage = onmessage;
    es.onerror = () => {
      es.close();
      setTimeout(connect, wait);
      wait = Math.min(wait * 2, 30000);
    };
  };
  // Stop is live only while this page follows a run (Run, the ladder, a replay)
  const stoppable = (on) => {
    const b = document.getElementById(ids.stop);
    if (b) b.disabled = !on;
  };
  window.qllFollow = () => { clear(); text = {}; stoppable(true); return page; };
  // the controls' hand-overs (the `sync` event's js): '<page token>:<number>'. A control
  // edited but not yet handed over ("dirty": Gradio fires its input event a moment after
  // the keystroke, or at the blur that the click itself causes), or a preset picked whose
  // controls are still on their way, holds a click back until its hand-over is numbered,
  // so that the value typed (the preset picked) just before the click is the one run.
  let plan = 0;
  let dirty = false;
  let handedOver = null;  // resolves the click waiting for the next hand-over
  window.qllPlan = () => {
    plan += 1;
    dirty = false;
    if (handedOver) handedOver();
    return `${page}:${plan}`;
  };
  // a preset picked (column_view.PICK_JS): its controls' hand-over follows the pick's event
  window.qllEdited = () => { dirty = true; };
  document.addEventListener('input', (e) => {
    const t = e.target;
    if (t instanceof Element && !t.closest('#' + ids.prompt)) dirty = true;
  }, true);
  const currentPlan = () => !dirty ? Promise.resolve(plan) : new Promise((resolve) => {
    const done = () => { handedOver = null; dirty = false; resolve(plan); };
    handedOver = done;
    setTimeout(done, HANDOVER_WAIT_MS);  // a control whose change Gradio never fires
  });
  const base = () => window.location.pathname.replace(/[^/]*$/, '');
  const note = (msg) => {
    const e = document.getElementById(ids.note);
    if (e) e.textContent = msg;
  };
  const post = async (what, body) => {
    try {
      const r = await fetch(`${base()}${ids.stageRoute}${what}/${page}`, {
        method: 'POST', headers: {'Content-Type': 'application/json'},
        body: JSON.stringify(body || {})});
      if (!r.ok) {
        note((await r.json().catch(() => ({}))).error || `HTTP ${r.status}`);
        if (what === 'run') stoppable(false);  // nothing started
      }
    } catch (err) {
      note(`the app cannot be reached: ${err}`);
      if (what === 'run') stoppable(false);
    }
  };
  // A Run's request leaves once the browser has drawn what the click changed (the emptied
  // boxes, the faded markup, Stop): drawing that takes the same CPU as the server and our
  // reader, and done while the requests are in flight it made the Playground's sent -> headers
  // 1.5-1.7x the headless one on a 2-core machine (TTFA 1.3-1.4x), against ~1.0x (TTFA ~1.15x)
  // with the request after the click's frame (docs/fidelity.md). SEND_WAIT_MS bounds the wait where no frame comes (a hidden tab).
  // `window.qllSendAtClick = true` sends at the click instead: benchmarks/ui_click_split's
  // side-by-side comparison only.
  const SEND_WAIT_MS = 100;
  let pending = null;  // a Run clicked whose request has not left yet (Stop cancels it)
  const drawn = () => new Promise((resolve) => {
    if (window.qllSendAtClick) { resolve(); return; }
    requestAnimationFrame(() => requestAnimationFrame(resolve));
    setTimeout(resolve, SEND_WAIT_MS);
  });
  document.addEventListener('click', (e) => {  // the stage's buttons (Gradio may redraw them)
    if (!(e.target instanceof Element)) return;
    if (e.target.closest('#' + ids.run)) {
      note('');
      window.qllFollow();
      const box = document.querySelector(`#${ids.prompt} textarea`);
      const prompt = box ? box.value : null;
      const run = {stopped: false};
      pending = run;
      Promise.all([currentPlan(), drawn()]).then(([seq]) => {
        if (run.stopped) return;
        if (pending === run) pending = null;
        post('run', prompt === null ? {seq} : {seq, prompt});
      });
    } else if (e.target.closest('#' + ids.stop)) {
      if (pending) {  // stopped before its request left: it never goes
        pending.stopped = true;
        pending = null;
        stoppable(false);
        note('stopped before the request was sent');
      } else post('stop');
    }
  });
  // the "Presenter view" button: hides the controls (body.presenter, see blocks.CSS) and says
  // how to get them back
  window.qllPresenter = () => {
    const on = document.body.classList.toggle('presenter');
    const b = document.getElementById(ids.presenterToggle);
    if (b) b.textContent = on ? 'Show controls' : 'Presenter view';
  };
  connect();
})();
