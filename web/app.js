/* PixFlow dashboard (docs/dashboard.md): the server renders the snapshot into the page; this
   script follows the job: GET /api/snapshot (the same HTML, rendered in C) after events and
   every second, GET /api/curves for each chart at its pixel width (min/max decimated by the
   server), and the Server-Sent Events of /api/events, whose ids the browser's EventSource
   resends as Last-Event-ID when it reconnects. window.pixflow holds what the tests read. */
(function () {
  'use strict';
  var cfg = JSON.parse(document.getElementById('pf-config').textContent);
  var run = new URLSearchParams(location.search).get('run');   /* finished runs: which one */
  var state = window.pixflow = { events: 0, lastEventId: 0, gaps: [], curves: {}, snapshots: 0 };

  function api(path, params) {
    var q = [];
    params = params || {};
    if (cfg.token) params.token = cfg.token;
    if (run !== null && !('run' in params)) params.run = run;
    Object.keys(params).forEach(function (k) {
      q.push(encodeURIComponent(k) + '=' + encodeURIComponent(params[k]));
    });
    return path + (q.length ? '?' + q.join('&') : '');
  }

  function setConn(text, cls) {
    var el = document.getElementById('pf-conn');
    el.textContent = text;
    el.className = 'conn ' + cls;
  }

  /* ---- the snapshot ---- */
  var snapshotBusy = false;
  function refreshSnapshot() {
    if (snapshotBusy) return;
    snapshotBusy = true;
    fetch(api('/api/snapshot')).then(function (r) {
      if (!r.ok) throw new Error('HTTP ' + r.status);
      return r.text();
    }).then(function (html) {
      document.getElementById('pf-snapshot').innerHTML = html;
      state.snapshots++;
    }).catch(function () { /* the next tick tries again */ }).then(function () {
      snapshotBusy = false;
    });
  }

  /* ---- curves ---- */
  var charts = {};
  function chartOpts(el, width) {
    return {
      title: el.dataset.label, width: width, height: 220,
      scales: { x: { time: false } },
      cursor: { drag: { x: true, y: false } },
      series: [
        { label: 'iteration' },
        { label: el.dataset.curve, stroke: '#2a6fdb', width: 1, points: { show: false } }
      ]
    };
  }
  function loadCurve(el) {
    var name = el.dataset.curve;
    var width = Math.max(100, Math.floor(el.clientWidth) - 2);
    return fetch(api('/api/curves', { name: name, width: width })).then(function (r) {
      if (!r.ok) throw new Error('HTTP ' + r.status);
      return r.json();
    }).then(function (d) {
      var data = [d.x, d.y];
      if (!charts[name]) {
        charts[name] = new uPlot(chartOpts(el, width), data, el);
      } else {
        if (charts[name].width !== width) charts[name].setSize({ width: width, height: 220 });
        charts[name].setData(data);
      }
      state.curves[name] = { points: d.points, added: d.added, held: d.held, width: width,
                             drawn: charts[name].data[0].length };
    });
  }
  var curvesBusy = false, curvesAgain = false;
  function refreshCurves() {
    if (curvesBusy) { curvesAgain = true; return; }
    curvesBusy = true;
    var els = Array.prototype.slice.call(document.querySelectorAll('.chart[data-curve]'));
    Promise.all(els.map(function (el) { return loadCurve(el).catch(function () {}); }))
      .then(function () {
        curvesBusy = false;
        state.curvesLoaded = (state.curvesLoaded || 0) + 1;
        /* first time every chart has drawn, ms since navigation (bench/dashboard) */
        if (!state.curvesAt) state.curvesAt = performance.now();
        if (curvesAgain) { curvesAgain = false; setTimeout(refreshCurves, 1000); }
      });
  }

  /* ---- events ---- */
  var snapTimer = null;
  function soon() {
    if (!snapTimer) snapTimer = setTimeout(function () { snapTimer = null; refreshSnapshot(); }, 250);
  }
  function follow() {
    if (!window.EventSource) { setConn('no EventSource: refreshing every second', 'lost'); return; }
    var es = new EventSource(api('/api/events'));
    es.onopen = function () { setConn('live', 'live'); };
    es.onerror = function () { setConn('reconnecting…', 'lost'); };
    es.onmessage = function (e) {
      state.events++;
      state.lastEventId = Number(e.lastEventId) || state.lastEventId;
      var d = null;
      try { d = JSON.parse(e.data); } catch (err) { return; }
      soon();
      if (d && (d.kind === 'train' || d.kind === 'eval')) refreshCurves();
    };
    es.addEventListener('gap', function (e) {
      var g = JSON.parse(e.data);
      state.gaps.push(g);
      setConn('live (events ' + g.first + '–' + g.last + ' missed)', 'live');
    });
  }

  /* the series a chart holds, for tests: [x, y] */
  window.uplotData = function (name) {
    return charts[name] ? [Array.from(charts[name].data[0]), Array.from(charts[name].data[1])] : null;
  };

  refreshCurves();
  follow();
  setInterval(refreshSnapshot, 1000);       /* liveness changes without events too */
  var resizeTimer = null;
  window.addEventListener('resize', function () {
    clearTimeout(resizeTimer);
    resizeTimer = setTimeout(refreshCurves, 300);
  });
})();
