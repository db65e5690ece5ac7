// Pacer console: plain JavaScript, no framework, no build step. Every piece
// of data from the server reaches the page as text (textContent, text nodes,
// dataset, encoded URLs), never as HTML. Live figures come from Server-Sent
// Events (/api/v1/events); the 15-minute history once from /api/v1/history,
// then from each event. Controls send the admin token from sessionStorage in
// an Authorization header (never a cookie). docs/console.md, docs/api.md.
'use strict';
(() => {
  const TOKEN_KEY = 'pacer.adminToken';
  const SPAN_S = 900;
  const ui = {
    meta: null, frame: null, route: { view: 'campaigns' }, history: { campaigns: {}, providers: {} },
    lastTotals: {}, detail: null, detailTimer: null, rendered: false,
  };

  // --- DOM helpers: text only ---------------------------------------------
  function el(tag, props, ...children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(props || {})) {
      if (v === undefined || v === null) continue;
      if (k === 'text') e.textContent = v;
      else if (k === 'class') e.className = v;
      else if (k === 'data') Object.assign(e.dataset, v);
      else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
      else e.setAttribute(k, String(v));
    }
    for (const c of children) if (c !== null && c !== undefined && c !== false) e.append(c);
    return e;
  }
  const SVG_NS = 'http://www.w3.org/2000/svg';
  function svg(tag, attrs, ...children) {
    const e = document.createElementNS(SVG_NS, tag);
    for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, String(v));
    for (const c of children) if (c) e.append(c);
    return e;
  }
  const $ = (id) => document.getElementById(id);

  // --- formatting ------------------------------------------------------------
  const num = (v) => (v === null || v === undefined ? '—' : Number(v).toLocaleString('en-US'));
  // A string is a stored NaN or Infinity (a row pacerd skips): marked, never drawn as a number.
  const rate = (v) =>
    v === null || v === undefined ? 'unlimited' : typeof v === 'string' ? `invalid (${v})` : `${+Number(v).toFixed(1)}/s`;
  const achieved = (v) => (v === null || v === undefined ? '—' : `${Number(v).toFixed(1)}/s`);
  function duration(s) {
    if (s === null || s === undefined || !(s >= 0)) return '—';
    if (s >= 360000) return '>99h';
    s = Math.ceil(s);
    if (s < 60) return `${s}s`;
    if (s < 3600) return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s`;
    return `${Math.floor(s / 3600)}h${String(Math.floor((s % 3600) / 60)).padStart(2, '0')}m`;
  }
  const scope = (which) => el('span', { class: `scope ${which}`, text: which === 'cluster' ? 'cluster' : 'this worker',
    title: which === 'cluster' ? 'all workers together (PostgreSQL / Redis)' : 'only the pacerd serving this page' });
  const campaignHref = (id) => `#/campaign/${encodeURIComponent(id)}`;

  // --- charts (inline SVG) -----------------------------------------------------
  // series: [{cls, t: [...], v: [...]}]; `now` in epoch seconds; a null value is a gap.
  // The x axis spans the last 15 minutes, or less while the history is
  // shorter (at least a minute), so a fresh console is not one sliver.
  function chart(series, now, opts) {
    const w = opts.width, h = opts.height, pad = opts.axes ? { l: 44, r: 8, t: 6, b: 16 } : { l: 1, r: 1, t: 2, b: 2 };
    let max = opts.min || 1;
    let first = now;
    for (const s of series) {
      for (const v of s.v) if (v !== null && v > max) max = v;
      if (s.t.length && s.t[0] < first) first = s.t[0];
    }
    max *= 1.1;
    const span = Math.min(SPAN_S, Math.max(60, now - first));
    const x = (t) => pad.l + ((t - (now - span)) / span) * (w - pad.l - pad.r);
    const y = (v) => h - pad.b - (v / max) * (h - pad.t - pad.b);
    const root = svg('svg', { class: 'chart', width: w, height: h, viewBox: `0 0 ${w} ${h}`, role: 'img' });
    if (opts.axes) {
      root.append(svg('line', { class: 'axis', x1: pad.l, y1: h - pad.b, x2: w - pad.r, y2: h - pad.b }));
      for (const f of [0, 0.5, 1]) {
        const v = (max / 1.1) * f;
        root.append(svg('line', { class: 'axis', x1: pad.l, y1: y(v), x2: w - pad.r, y2: y(v) }));
        const label = svg('text', { x: pad.l - 4, y: y(v) + 3, 'text-anchor': 'end' });
        label.textContent = v >= 100 ? Math.round(v) : +v.toFixed(1);
        root.append(label);
      }
      for (const [f, anchor] of [[1, 'start'], [2 / 3, 'middle'], [1 / 3, 'middle'], [0, 'end']]) {
        const ago = span * f;
        const label = svg('text', { x: x(now - ago), y: h - 4, 'text-anchor': anchor });
        label.textContent = !ago ? 'now' : ago >= 120 ? `-${Math.round(ago / 60)}m` : `-${Math.round(ago)}s`;
        root.append(label);
      }
    }
    for (const s of series) {
      if (s.band) {  // 0/1 series drawn as shaded spans (a provider's pauses)
        for (let i = 0; i + 1 < s.t.length; i++)
          if (s.v[i] > 0) root.append(svg('rect', { class: s.cls, x: x(s.t[i]), y: pad.t,
            width: Math.max(1, x(s.t[i + 1]) - x(s.t[i])), height: h - pad.t - pad.b }));
        continue;
      }
      let points = [];
      const flush = () => {
        if (points.length > 1) root.append(svg('polyline', { class: s.cls, points: points.join(' ') }));
        points = [];
      };
      for (let i = 0; i < s.t.length; i++) {
        if (s.t[i] < now - span) continue;
        if (s.v[i] === null) { flush(); continue; }
        points.push(`${x(s.t[i]).toFixed(1)},${y(s.v[i]).toFixed(1)}`);
      }
      flush();
    }
    return root;
  }
  function legend(...items) {
    return el('div', { class: 'legend' }, ...items.map(([cls, text]) => el('span', { class: cls, text: `— ${text}` })));
  }

  // --- history: from /api/v1/history, then one point per event ---------------
  function push(store, key, t, v) {
    const s = store[key] || (store[key] = { t: [], v: [] });
    if (s.t.length && t <= s.t[s.t.length - 1]) return;
    s.t.push(t); s.v.push(v === undefined ? null : v);
    while (s.t.length && s.t[0] < t - SPAN_S) { s.t.shift(); s.v.shift(); }
  }
  function record(frame) {
    const t = frame.at_epoch_s;
    if (!t) return;
    for (const c of frame.campaigns) {
      const h = ui.history.campaigns[c.id] || (ui.history.campaigns[c.id] = {});
      push(h, 'send_rate', t, c.send_rate);
      push(h, 'achieved_rate', t, c.achieved_rate);
    }
    for (const p of frame.providers) {
      const h = ui.history.providers[p.id] || (ui.history.providers[p.id] = {});
      push(h, 'rate', t, p.rate);
      push(h, 'effective_rate', t, p.effective_rate);
      push(h, 'paused', t, p.paused ? 1 : 0);
      const last = ui.lastTotals[p.id];
      const w = p.worker;
      if (w && last && t > last.t) {
        push(h, 'throttled_per_s', t, Math.max(0, w.throttled_total - last.throttled) / (t - last.t));
        push(h, 'server_errors_per_s', t, Math.max(0, w.server_errors_total - last.errors) / (t - last.t));
      }
      if (w) ui.lastTotals[p.id] = { t, throttled: w.throttled_total, errors: w.server_errors_total };
    }
  }
  const series = (store, key) => (store && store[key]) || { t: [], v: [] };
  // The history document's series, {t0, step, v} (one point per bucket, from
  // its start), as the {t, v} the charts and the live points use.
  function expand(s) {
    if (!s || s.t0 === null || s.t0 === undefined) return { t: [], v: [] };
    return { t: s.v.map((_, i) => s.t0 + i * s.step), v: s.v.slice() };
  }

  // --- views -------------------------------------------------------------------
  // "2 active, 1 paused, 3 completed": the list keeps a campaign for an hour
  // after it completes, so one total would count the finished ones as live.
  function campaignCounts(campaigns) {
    const by = {};
    for (const c of campaigns) by[c.state] = (by[c.state] || 0) + 1;
    const order = ['active', 'paused', 'completed'];
    const states = order.concat(Object.keys(by).filter((s) => !order.includes(s)).sort());
    const parts = states.filter((s) => by[s]).map((s) => `${by[s]} ${s}`);
    return parts.length ? parts.join(', ') : 'none';
  }

  // "30 (10.0%)": failed, rejected and dead-token rows with their share of the finished ones.
  function failedText(c) {
    const n = c.failed + c.rejected + c.invalid_token;
    return c.failed_pct === null || c.failed_pct === undefined ? num(n) : `${num(n)} (${c.failed_pct}%)`;
  }

  function deliveredText(c) {
    return c.receipts ? `${num(c.receipts.delivered)} delivered` : 'no receipts';
  }

  function providerLink(id) {
    return id === null ? el('span', { text: '—' }) : el('a', { href: '#/providers', class: 'provider-link', data: { provider: id }, text: id });
  }

  // Each cell carries its heading (data-label): the phone layout shows the rows
  // as cards with a label before each value (console.css).
  function cell(label, attrs, ...children) {
    return el('td', { ...attrs, data: { ...(attrs.data || {}), label } }, ...children);
  }

  function campaignsView(frame) {
    const rows = frame.campaigns.map((c) => {
      const h = ui.history.campaigns[c.id];
      const pct = c.progress === null ? null : Math.floor(c.progress * 100);
      const fill = el('span');
      fill.style.width = `${pct === null ? 0 : pct}%`;
      const progressText = c.total === null ? `${num(c.sent)} sent, total unknown` : `${num(c.sent + c.failed + c.rejected + c.invalid_token + c.suppressed)} / ${num(c.total)} (${pct}%)`;
      const eta = `${c.backlog_lower_bound && c.eta_s !== null ? '≥' : ''}${duration(c.eta_s)}`;
      return el('tr', { class: 'row', data: { campaign: c.id } },
        cell('Campaign', { class: 'name' }, el('a', { href: campaignHref(c.id), class: 'campaign-link', text: c.name || c.id }),
          c.name ? el('span', { class: 'id', text: c.id }) : null),
        cell('State', {}, el('span', { class: `badge ${c.state}`, text: c.state }),
          el('span', { class: 'id', text: c.priority === null ? 'default' : c.priority })),
        cell('Provider', {}, providerLink(c.provider)),
        cell('Progress', {}, el('span', { class: 'bar' }, fill),
          el('span', { class: 'progress-text', text: progressText }),
          el('span', { class: 'id', text: `backlog ${c.backlog_lower_bound ? '≥' : ''}${num(c.backlog)} · ETA ${eta}` })),
        cell('Sent', { class: 'num' }, el('span', { class: 'sent', text: num(c.sent) }),
          el('span', { class: 'id delivered', text: deliveredText(c) })),
        cell('Failed', { class: 'num failed', text: failedText(c) }),
        cell('Rate', { class: 'num' }, el('span', { class: 'send-rate', text: rate(c.send_rate) }), ' / ',
          el('span', { class: 'achieved', text: achieved(c.achieved_rate) }),
          chart([{ cls: 'configured', ...series(h, 'send_rate') }, { cls: 'achieved', ...series(h, 'achieved_rate') }],
            frame.at_epoch_s, { width: 120, height: 28 })),
        cell('Limited by', { class: `limited code-${c.limited_by.code}`, text: c.limited_by.text, data: { code: c.limited_by.code } }));
    });
    const head = el('tr', {}, ...[['Campaign'], ['State, priority'], ['Provider'], ['Progress, backlog, ETA'],
      ['Sent, delivered', 'num'], ['Failed (%)', 'num'], ['Rate: configured / achieved, up to 15 min', 'num'],
      ['Limited by']].map(([t, cls]) => el('th', { class: cls, text: t })));
    return el('div', {},
      el('div', { class: 'card' },
        el('h2', {}, `Campaigns (${campaignCounts(frame.campaigns)}) `, scope('cluster')),
        el('p', { class: 'muted', text: `Every worker together, from PostgreSQL as \`pacerctl top\` counts them; achieved rate over the last ${frame.window_s} s; failed counts failed, rejected and dead-token rows, with their share of the finished messages. Select a campaign for its details and controls.` }),
        legend(['configured', 'configured send_rate'], ['achieved', 'achieved rate']),
        el('table', { id: 'campaigns', class: 'cards-on-phone' }, el('thead', {}, head), el('tbody', {}, ...rows)),
        frame.campaigns.length ? null : el('p', { class: 'muted', text: 'No active or paused campaigns.' })));
  }

  function figures(pairs) {
    const dl = el('dl', { class: 'figures' });
    for (const [k, v, cls] of pairs) dl.append(el('dt', { text: k }), el('dd', { class: cls, text: v }));
    return dl;
  }

  function campaignDetailSkeleton(id) {
    const result = el('div', { id: 'control-result', class: 'result' });
    const rateIn = el('input', { id: 'rate-input', type: 'text', inputmode: 'decimal', placeholder: 'msg/s' });
    const burstIn = el('input', { id: 'burst-input', type: 'text', inputmode: 'decimal', placeholder: 'burst (opt.)' });
    const base = `/api/v1/campaigns/${encodeURIComponent(id)}`;
    const act = (what, body) => control(`${base}/${what}`, body, result);
    const readOnly = ui.meta && !ui.meta.controls;
    return el('div', {},
      el('p', {}, el('a', { href: '#/campaigns', text: '← all campaigns' })),
      el('div', { class: 'card' }, el('h2', { id: 'detail-title' }), el('div', { id: 'detail-sub', class: 'muted' })),
      el('div', { class: 'card' },
        el('h3', { text: 'Controls' }),
        el('div', { class: 'controls' },
          el('button', { id: 'pause-btn', type: 'button', text: 'Pause', onclick: () => act('pause') }),
          el('button', { id: 'resume-btn', type: 'button', text: 'Resume', onclick: () => act('resume') }),
          el('button', { id: 'cancel-btn', type: 'button', class: 'danger', text: 'Cancel…',
            onclick: () => { if (window.confirm('Cancel this campaign for good? Its remaining messages fail with reason "cancelled".')) act('cancel'); } }),
          el('span', { class: 'muted', text: '  send_rate' }), rateIn, burstIn,
          el('button', { id: 'rate-btn', type: 'button', text: 'Set rate',
            onclick: () => act('rate', rateBody(rateIn.value, burstIn.value)) })),
        el('p', { class: 'muted', text: readOnly
          ? 'This pacerd is read-only (admin.console_controls is off): controls are refused.'
          : 'Controls need the admin token (top right); they are the same operations as pacerctl and reach every worker.' }),
        result),
      el('div', { id: 'detail-live' }),
      el('div', { id: 'detail-ledger' }));
  }

  function rateBody(rateText, burstText) {
    const body = { rate: rateText.trim() === '' ? '' : rateText.trim() };
    if (burstText.trim() !== '') body.burst = burstText.trim();
    return body;
  }

  function campaignDetailLive(frame, id) {
    const c = frame.campaigns.find((x) => x.id === id);
    const live = $('detail-live');
    if (!live) return;
    $('detail-title').textContent = c ? (c.name || c.id) : id;
    $('detail-sub').textContent = c ? `id ${c.id} · ${c.state} · provider ${c.provider === null ? 'none' : c.provider} · priority ${c.priority === null ? 'default' : c.priority}`
      : 'not active or paused (cancelled, completed, or unknown)';
    if (!c) { live.replaceChildren(); return; }
    const h = ui.history.campaigns[c.id];
    const w = c.worker;
    live.replaceChildren(el('div', { class: 'grid' },
      el('div', { class: 'card' }, el('h3', {}, 'Rate over time (up to 15 minutes) ', scope('cluster')),
        legend(['configured', 'configured send_rate'], ['achieved', 'achieved']),
        chart([{ cls: 'configured', ...series(h, 'send_rate') }, { cls: 'achieved', ...series(h, 'achieved_rate') }],
          frame.at_epoch_s, { width: 560, height: 200, axes: true })),
      el('div', { class: 'card' }, el('h3', {}, 'Figures ', scope('cluster')),
        figures([['state', c.state], ['send_rate', rate(c.send_rate), 'detail-send-rate'], ['achieved', achieved(c.achieved_rate), 'detail-achieved'],
          ['total', c.total === null ? 'unknown' : num(c.total)], ['sent', num(c.sent), 'detail-sent'], ['failed', num(c.failed)],
          ['rejected', num(c.rejected)], ['invalid token', num(c.invalid_token)],
          ['failed share', c.failed_pct === null ? '—' : `${c.failed_pct}% of the finished`, 'detail-failed-pct'],
          ['delivered (receipts)', c.receipts ? `${num(c.receipts.delivered)}, undelivered ${num(c.receipts.undelivered)}, pending ${num(c.receipts.pending)}` : 'no receipts'],
          ['retries, every worker', c.retries_total === null ? 'unknown (needs --redis)' : num(c.retries_total), 'detail-retries'],
          ['suppressed', num(c.suppressed)], ['parked', num(c.parked)], ['backlog', `${c.backlog_lower_bound ? '≥' : ''}${num(c.backlog)}`],
          ['progress', c.progress === null ? '—' : `${Math.floor(c.progress * 100)}%`], ['ETA', duration(c.eta_s)],
          ['limited by', c.limited_by.text]]),
        el('h3', {}, 'This worker ', scope('worker')),
        w ? figures([['held in memory', `${num(w.backlog)}${w.backlog_capped ? ` (it counts ${num(w.backlog_reported)} with parked rows; capped at what is left)` : ''}`, 'detail-held'],
          ['waiting: retry, quiet hours, cap', `${num(w.retrying)}, ${num(w.quiet_waiting)}, ${num(w.cap_waiting)}`],
          ['in the sink', num(w.in_flight)], ['retries', num(w.retries_total)],
          ['achieved (10 s)', achieved(w.achieved_rate)]])
          : el('p', { class: 'muted', text: 'This worker has had none of its messages.' }))));
  }

  function campaignDetailLedger(d) {
    const box = $('detail-ledger');
    if (!box) return;
    if (d.error) { box.replaceChildren(el('div', { class: 'card' }, el('p', { class: 'result bad', text: d.error }))); return; }
    const outcomes = Object.entries(d.outcomes || {});
    const letters = d.dead_letters || [];
    box.replaceChildren(el('div', { class: 'grid' },
      el('div', { class: 'card' }, el('h3', {}, 'Outcomes in the ledger ', scope('cluster')),
        outcomes.length ? figures(outcomes.map(([s, n]) => [s, num(n)])) : el('p', { class: 'muted', text: 'No ledger rows yet.' }),
        el('p', { class: 'muted', text: `last recorded ${d.ledger && d.ledger.last_recorded_at ? d.ledger.last_recorded_at : '—'}; parked ${num(d.parked)}` })),
      el('div', { class: 'card' }, el('h3', {}, 'Recent dead letters ', scope('cluster')),
        el('p', { class: 'muted', text: 'Rows that are not sent or delivered, among the campaign\'s 5,000 newest ledger rows.' }),
        letters.length ? el('table', { id: 'dead-letters' },
          el('thead', {}, el('tr', {}, ...['message', 'status', 'attempts', 'reason', 'recorded (UTC)', 'partition/offset'].map((t) => el('th', { text: t })))),
          el('tbody', {}, ...letters.map((l) => el('tr', {},
            el('td', { class: 'name', text: l.message_id }), el('td', { text: l.status }), el('td', { class: 'num', text: num(l.attempts) }),
            el('td', { class: 'name', text: l.reason }), el('td', { text: l.recorded_at }), el('td', { text: `${l.partition}/${l.offset}` })))))
          : el('p', { class: 'muted', text: 'None.' }))));
  }

  function providersView(frame) {
    const cards = frame.providers.map((p) => {
      const h = ui.history.providers[p.id];
      const w = p.worker;
      const eff = p.effective_from === 'redis' ? 'cluster' : p.effective_from === 'worker' ? 'worker' : 'cluster';
      return el('div', { class: 'card', data: { provider: p.id } },
        el('h2', { text: p.id }),
        el('div', { class: 'grid' },
          el('div', {},
            figures([['configured rate', `${rate(p.rate)} (burst ${num(p.burst)})`], ['campaigns', num(p.campaigns)],
              ['effective rate', `${p.effective_rate === null ? 'unlimited' : achieved(p.effective_rate)} (${p.effective_from || '—'})`],
              ['achieved by its campaigns', achieved(p.achieved_rate)],
              ['paused', p.paused ? `yes, ${p.paused_s.toFixed(1)} s left (${p.paused_from})` : 'no'],
              ['circuit', p.circuit === null ? 'unknown (this worker does not know this provider yet)' : `${p.circuit} (as this worker holds it)`],
              ['health', p.health.text, 'provider-health'],
              ['429/503 answers, every worker', p.cluster ? num(p.cluster.throttled_total) : 'unknown (needs --redis)', 'cluster-throttled'],
              ['5xx answers, every worker', p.cluster ? num(p.cluster.server_errors_total) : 'unknown (needs --redis)', 'cluster-server-errors']]),
            el('p', { class: 'muted' }, 'Above: ', scope(eff), ' — configured from PostgreSQL; effective rate and pause from Redis when pacerd shares them there (--redis), else this worker\'s view.'),
            el('h3', {}, 'This worker ', scope('worker')),
            w ? figures([['429/503 answers', num(w.throttled_total)], ['5xx answers', num(w.server_errors_total)],
              ['degraded (Redis away)', w.degraded ? 'yes' : 'no'], ['its effective rate', achieved(w.effective_rate)]])
              : el('p', { class: 'muted', text: 'This worker does not know this provider yet.' })),
          el('div', {},
            el('h3', {}, 'Quota and effective rate (up to 15 min) ', scope(eff)),
            legend(['configured', 'configured rate'], ['effective', 'effective rate'], ['throttled', 'paused (shaded)']),
            chart([{ cls: 'paused', band: true, ...series(h, 'paused') }, { cls: 'configured', ...series(h, 'rate') },
              { cls: 'effective', ...series(h, 'effective_rate') }], frame.at_epoch_s, { width: 480, height: 150, axes: true }),
            el('h3', {}, '429/503 and 5xx answers per second ', scope('worker')),
            legend(['throttled', '429/503'], ['errors', '5xx']),
            chart([{ cls: 'throttled', ...series(h, 'throttled_per_s') }, { cls: 'errors', ...series(h, 'server_errors_per_s') }],
              frame.at_epoch_s, { width: 480, height: 110, axes: true, min: 1 }))));
    });
    return el('div', {}, frame.providers.length ? null : el('p', { class: 'muted', text: 'No providers.' }), ...cards);
  }

  // --- controls ----------------------------------------------------------------
  async function control(url, body, out) {
    out.className = 'result';
    out.textContent = 'sending…';
    const headers = { 'Content-Type': 'application/json' };
    const token = sessionStorage.getItem(TOKEN_KEY);
    if (token) headers.Authorization = `Bearer ${token}`;
    let res;
    try {
      res = await fetch(url, { method: 'POST', headers, body: JSON.stringify(body || {}), credentials: 'omit', cache: 'no-store' });
    } catch (e) {
      out.className = 'result bad';
      out.textContent = `Not sent: ${e.message}`;
      return;
    }
    let doc = {};
    try { doc = await res.json(); } catch (e) { doc = {}; }
    if (!res.ok) {
      out.className = 'result bad';
      out.textContent = `Refused (${res.status}): ${doc.error || res.statusText}`;
      return;
    }
    const row = doc.campaign || doc.provider || {};
    out.className = 'result ok';
    // A provider has no state: say only what it has.
    const limits = `rate ${rate(row.send_rate !== undefined ? row.send_rate : row.rate)}, burst ${num(row.burst)}`;
    const now = doc.campaign ? `state ${row.state}, ${limits}` : limits;
    out.textContent = doc.changed === false ? `Nothing to change: it already was so (${now}).` : `Done: ${doc.change} → ${now}.`;
  }

  // The dropdown follows the providers of each frame (a bookmark or a reload
  // renders the page before the first one), keeping the choice made.
  function fillProviderSelect(frame) {
    const select = $('provider-select');
    if (!select) return;
    const ids = frame.providers.map((p) => p.id);
    const have = Array.from(select.options).map((o) => o.value);
    if (ids.length === have.length && ids.every((id, i) => id === have[i])) return;
    const chosen = select.value;
    select.replaceChildren(...ids.map((id) => el('option', { value: id, text: id })));
    if (ids.includes(chosen)) select.value = chosen;
  }

  function providerRateControls() {
    const result = el('div', { id: 'provider-result', class: 'result' });
    const idIn = el('select', { id: 'provider-select' });
    for (const p of ui.frame ? ui.frame.providers : []) idIn.append(el('option', { value: p.id, text: p.id }));
    const rateIn = el('input', { id: 'provider-rate-input', type: 'text', placeholder: 'msg/s' });
    const burstIn = el('input', { id: 'provider-burst-input', type: 'text', placeholder: 'burst (opt.)' });
    return el('div', { class: 'card' }, el('h3', { text: 'Set a provider\'s rate' }),
      el('div', { class: 'controls' }, idIn, rateIn, burstIn,
        el('button', { id: 'provider-rate-btn', type: 'button', text: 'Set rate',
          onclick: () => control(`/api/v1/providers/${encodeURIComponent(idIn.value)}/rate`, rateBody(rateIn.value, burstIn.value), result) })),
      result);
  }

  // --- routing and rendering -----------------------------------------------------
  function parseRoute() {
    const h = location.hash || '#/campaigns';
    if (h.startsWith('#/campaign/')) {
      try { return { view: 'campaign', id: decodeURIComponent(h.slice(11)) }; } catch (e) { return { view: 'campaigns' }; }
    }
    return { view: h === '#/providers' ? 'providers' : 'campaigns' };
  }

  function navigate() {
    ui.route = parseRoute();
    clearInterval(ui.detailTimer);
    ui.detailTimer = null;
    $('nav-campaigns').classList.toggle('current', ui.route.view !== 'providers');
    $('nav-providers').classList.toggle('current', ui.route.view === 'providers');
    const view = $('view');
    if (ui.route.view === 'campaign') {
      view.replaceChildren(campaignDetailSkeleton(ui.route.id));
      const load = () => fetchJson(`/api/v1/campaigns/${encodeURIComponent(ui.route.id)}`).then(campaignDetailLedger);
      load();
      ui.detailTimer = setInterval(load, 5000);
    } else if (ui.route.view === 'providers') {
      view.replaceChildren(el('div', { id: 'providers-live' }), providerRateControls());
    } else {
      view.replaceChildren(el('div', { id: 'campaigns-live' }));
    }
    if (ui.frame) update(ui.frame);
  }

  function update(frame) {
    if (ui.route.view === 'campaign') campaignDetailLive(frame, ui.route.id);
    else if (ui.route.view === 'providers') {
      const box = $('providers-live');
      if (box) box.replaceChildren(providersView(frame));
      fillProviderSelect(frame);
    }
    else { const box = $('campaigns-live'); if (box) box.replaceChildren(campaignsView(frame)); }
    const problems = [];
    if (frame.sources.postgres !== 'ok') problems.push(`PostgreSQL: ${frame.sources.postgres}`);
    if (frame.sources.redis !== 'ok' && frame.sources.redis !== 'off') problems.push(`Redis: ${frame.sources.redis}`);
    const banner = $('banner');
    banner.hidden = problems.length === 0;
    banner.textContent = problems.join(' · ');
    $('footer').textContent = `pacerd ${frame.sources.version} at ${frame.sources.worker} · database time ${frame.at} · ` +
      `${frame.totals.campaigns} campaigns, ${achieved(frame.totals.achieved_rate)} achieved, backlog ${frame.totals.backlog_lower_bound ? '≥' : ''}${num(frame.totals.backlog)}`;
    if (!ui.rendered) {
      ui.rendered = true;
      performance.mark('pacer-first-render');
      document.body.dataset.rendered = 'true';
    }
  }

  // With admin.reads_need_token, reading needs the token too: it goes in a
  // header (never a cookie or the URL), so the stream, which cannot send one,
  // gives way to polling.
  function readHeaders() {
    const token = sessionStorage.getItem(TOKEN_KEY);
    return token ? { Authorization: `Bearer ${token}` } : {};
  }

  async function fetchJson(url) {
    try {
      const res = await fetch(url, { credentials: 'omit', cache: 'no-store', headers: readHeaders() });
      if (res.status === 401) live.needToken = true;
      let doc = {};
      try { doc = await res.json(); } catch (e) { doc = {}; }
      return res.ok ? doc : { error: `${res.status}: ${doc.error || res.statusText}`, status: res.status };
    } catch (e) {
      return { error: e.message };
    }
  }

  function tokenState() {
    $('token-state').textContent = sessionStorage.getItem(TOKEN_KEY) ? 'token set for this tab' : 'no token';
  }

  // One stream per page. Closed when the page is hidden for navigation, so a
  // page kept in the back/forward cache does not hold one of the browser's
  // few connections to this host (the next page would wait for it).
  let stream = null;
  // The stream's health. EventSource retries by itself only after a stream
  // that was answered 200 drops; after an error status (503 when the
  // listener's streams are taken) it gives up for good. So on any error the
  // page closes it, tries again with a growing, jittered delay, and polls the
  // state document meanwhile, so the figures keep coming and say how old they are.
  const live = { lastAt: 0, retryMs: 1000, retryTimer: null, pollTimer: null, streaming: false, needToken: false };
  const STALE_S = 5;  // the refresher publishes every second: older than this is stale

  function showFrame(frame) {
    ui.frame = frame;
    record(frame);
    live.lastAt = Date.now();
    update(frame);
    showStatus();
  }

  function showStatus() {
    const status = $('status');
    const age = live.lastAt ? Math.floor((Date.now() - live.lastAt) / 1000) : null;
    const stale = age === null || age > STALE_S;
    document.body.classList.toggle('stale', live.lastAt > 0 && stale);
    let how = live.streaming ? 'live' : live.pollTimer ? 'polling, stream reconnecting' : 'reconnecting';
    if (live.needToken) how = sessionStorage.getItem(TOKEN_KEY) ? 'polling with the token' : 'reading needs the admin token: enter it above';
    status.className = `status ${stale ? 'down' : live.streaming ? 'live' : 'polling'}`;
    status.dataset.stale = String(stale);
    const worker = ui.frame && ui.frame.sources ? ` · served by ${ui.frame.sources.worker}` : '';
    status.textContent = `${how} · last update ${age === null ? 'never' : `${age} s ago`}${worker}`;
  }

  function startPolling() {
    if (live.pollTimer) return;
    const poll = async () => {
      const doc = await fetchJson('/api/v1/state');
      if (!live.pollTimer) return;  // the stream came back meanwhile
      if (!doc.error && doc.sources) showFrame(doc);
      live.pollTimer = setTimeout(poll, 2000);
    };
    live.pollTimer = setTimeout(poll, 0);
  }

  function stopPolling() {
    clearTimeout(live.pollTimer);
    live.pollTimer = null;
  }

  function connect() {
    clearTimeout(live.retryTimer);
    if (stream) stream.close();
    stream = null;
    if (live.needToken) {  // EventSource cannot send the token
      startPolling();
      showStatus();
      return;
    }
    const es = new EventSource('/api/v1/events?client=console');
    stream = es;
    es.addEventListener('state', (e) => {
      let frame;
      try { frame = JSON.parse(e.data); } catch (err) { return; }
      live.streaming = true;
      live.retryMs = 1000;
      stopPolling();
      showFrame(frame);
    });
    es.onerror = () => {
      if (stream !== es) return;
      es.close();
      stream = null;
      live.streaming = false;
      startPolling();
      const wait = live.retryMs * (0.5 + Math.random());
      live.retryMs = Math.min(live.retryMs * 2, 30000);
      live.retryTimer = setTimeout(connect, wait);
      showStatus();
    };
  }

  async function start() {
    $('token-form').addEventListener('submit', (e) => {
      e.preventDefault();
      const v = $('token-input').value.trim();
      if (v) sessionStorage.setItem(TOKEN_KEY, v);
      $('token-input').value = '';
      tokenState();
      if (live.needToken) { stopPolling(); startPolling(); }
    });
    $('token-clear').addEventListener('click', () => { sessionStorage.removeItem(TOKEN_KEY); tokenState(); });
    tokenState();
    window.addEventListener('hashchange', navigate);
    window.addEventListener('pagehide', () => {
      if (stream) { stream.close(); stream = null; }
      stopPolling();
      clearTimeout(live.retryTimer);
    });
    window.addEventListener('pageshow', (e) => { if (e.persisted) connect(); });
    setInterval(showStatus, 1000);
    const [meta, history] = await Promise.all([fetchJson('/api/v1/meta'), fetchJson('/api/v1/history')]);
    ui.meta = meta.error ? null : meta;
    if (!history.error) {
      for (const [id, h] of Object.entries(history.campaigns || {}))
        ui.history.campaigns[id] = { send_rate: expand(h.send_rate), achieved_rate: expand(h.achieved_rate) };
      for (const [id, h] of Object.entries(history.providers || {})) {
        const out = {};
        for (const [name, s] of Object.entries(h)) out[name] = expand(s);
        ui.history.providers[id] = out;
      }
    }
    navigate();
    connect();
  }

  document.addEventListener('DOMContentLoaded', start);
})();
