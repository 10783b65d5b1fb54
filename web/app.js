/* PixFlow dashboard (docs/dashboard.md): the server renders the snapshot into the page; this
   script follows the job: GET /api/snapshot (the same HTML, rendered in C) after events and
   every second, GET /api/curves for each chart at its pixel width (min/max decimated by the
   server), and the Server-Sent Events of /api/events, whose ids the browser's EventSource
   resends as Last-Event-ID when it reconnects. window.pixflow holds what the tests read. */
(function () {
  'use strict';
  var cfg = JSON.parse(document.getElementById('pf-config').textContent);
  var run = new URLSearchParams(location.search).get('run');   /* finished runs: which one */
  /* every script has run (uPlot, loaded after this file so that the first requests go out
     before it is parsed) */
  var scriptsRan = new Promise(function (ok) {
    if (document.readyState !== 'loading') ok();
    else document.addEventListener('DOMContentLoaded', ok);
  });
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
  /* axis labels that keep small values apart (a learning rate of 2e-4 is not "0") */
  function tick(v) {
    if (v === null || v === undefined) return '';
    var a = Math.abs(v);
    return a !== 0 && (a < 1e-2 || a >= 1e6) ? v.toExponential(1) : String(+v.toPrecision(4));
  }
  /* points drawn where a series is sparse (evaluations), lines alone where it is dense */
  function sparse(u, si, i0, i1) { return i1 - i0 < 64; }
  function chartOpts(el, width) {
    return {
      title: el.dataset.label, width: width, height: 220,
      scales: { x: { time: false } },
      cursor: { drag: { x: true, y: false } },
      axes: [{}, { size: 64, values: function (u, vals) { return vals.map(tick); } }],
      series: [
        { label: 'iteration' },
        { label: el.dataset.curve, stroke: '#2a6fdb', width: 1,
          points: { show: sparse, size: 6 }, value: function (u, v) { return tick(v); } }
      ]
    };
  }
  var COLORS = ['#2a6fdb', '#d9480f', '#2b8a3e', '#862e9c', '#e67700', '#0b7285'];
  function loadCurve(el) {
    var name = el.dataset.curve;
    /* "a,b,...": one chart of several curves (a GAN job's terms), of this page's run */
    var names = name.split(',');
    var width = Math.max(100, Math.floor(el.clientWidth) - 2);
    var shown = names.length > 1 ? [null] : compared();   /* [null] (this page's run) or the
                                                             ticked runs */
    var asked = names.length > 1 ? names : shown;
    return Promise.all(asked.map(function (a) {
      var ri = names.length > 1 ? null : a;
      var p = { name: names.length > 1 ? a : name, width: width };
      if (ri !== null) p.run = ri;
      return fetch(api('/api/curves', p)).then(function (r) {
        if (!r.ok) throw new Error('HTTP ' + r.status);
        return r.json();
      });
    })).then(function (ds) {
      return scriptsRan.then(function () { return ds; });
    }).then(function (ds) {
      /* one run: its series as sent; several: overlaid on the union of their steps */
      var data = ds.length === 1 ? [ds[0].x, ds[0].y]
                                 : uPlot.join(ds.map(function (d) { return [d.x, d.y]; }));
      var key = shown.join(',');
      if (charts[name] && charts[name].pfKey !== key) {
        charts[name].destroy();
        delete charts[name];
      }
      if (!charts[name]) {
        var opts = chartOpts(el, width);
        if (asked.length > 1) {
          opts.series = [{ label: 'iteration' }].concat(asked.map(function (a, i) {
            return { label: names.length > 1 ? a : runName(a),
                     stroke: COLORS[i % COLORS.length], width: 1,
                     points: { show: sparse, size: 6 }, spanGaps: true,
                     value: function (u, v) { return tick(v); } };
          }));
        }
        charts[name] = new uPlot(opts, data, el);
        charts[name].pfKey = key;
      } else {
        if (charts[name].width !== width) charts[name].setSize({ width: width, height: 220 });
        charts[name].setData(data);
      }
      state.curves[name] = { points: ds[0].points, added: ds[0].added, held: ds[0].held,
                             width: width, drawn: charts[name].data[0].length,
                             runs: ds.map(function (d) { return d.points; }) };
      /* a section of charts shown only with data (the GAN terms): shown once a curve has some */
      var sec = el.closest('section[data-when-points]');
      if (sec && ds.some(function (d) { return d.points > 0; })) sec.hidden = false;
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
    /* from the event after the last one the page was rendered with (reconnects send
       Last-Event-ID, which the server prefers) */
    var es = new EventSource(api('/api/events', { after: cfg.last_event_id || 0 }));
    es.onopen = function () { setConn('live', 'live'); };
    es.onerror = function () { setConn('reconnecting…', 'lost'); };
    es.onmessage = function (e) {
      state.events++;
      state.lastEventId = Number(e.lastEventId) || state.lastEventId;
      var d = null;
      try { d = JSON.parse(e.data); } catch (err) { return; }
      soon();
      if (d && (d.kind === 'train' || d.kind === 'eval')) refreshCurves();
      if (d && (d.kind === 'eval' || d.kind === 'visual')) setTimeout(refreshImages, 500);
    };
    es.addEventListener('gap', function (e) {
      var g = JSON.parse(e.data);
      state.gaps.push(g);
      setConn('live (events ' + g.first + '–' + g.last + ' missed)', 'live');
    });
  }

  /* ---- several runs (a monitor of finished runs): tick some to compare ---- */
  var runs = [], ticked = {};
  function runName(ri) { return runs[ri] ? runs[ri].name : 'run ' + ri; }
  function compared() {
    var list = Object.keys(ticked).filter(function (k) { return ticked[k]; }).map(Number);
    return list.length > 1 ? list.sort(function (x, y) { return x - y; }) : [null];
  }
  function loadRuns() {
    return fetch(api('/api/runs')).then(function (r) { return r.json(); }).then(function (d) {
      runs = d.runs || [];
      state.runs = runs.length;
      if (runs.length < 2) return;
      $('pf-runs').hidden = false;
      var list = $('pf-run-list'), mine = run === null ? 0 : Number(run);
      runs.forEach(function (r) {
        var label = document.createElement('label'), box = document.createElement('input');
        box.type = 'checkbox';
        box.value = r.index;
        box.checked = r.index === mine;
        ticked[r.index] = box.checked;
        box.addEventListener('change', function () {
          ticked[r.index] = box.checked;
          refreshCurves();
          showCompare();
        });
        label.appendChild(box);
        label.appendChild(document.createTextNode(' ' + r.name));
        list.appendChild(label);
      });
    }).catch(function () {});
  }
  function showCompare() {
    var shown = compared(), panel = $('pf-compare-panel'), box = $('pf-compare');
    var step = currentStep(), e = step === undefined ? null : evalAt(step);
    var name = $('pf-eval-name').value;
    panel.hidden = shown.length < 2 || !e || !name;
    if (panel.hidden) return;
    box.innerHTML = '';
    shown.forEach(function (ri) {
      var f = document.createElement('figure'), im = document.createElement('img');
      var cap = document.createElement('figcaption');
      im.src = api('/api/image', { kind: 'eval', step: e.step, name: name, run: ri });
      im.alt = 'no ' + name + ' at iteration ' + e.step;
      cap.textContent = runName(ri) + ' · iteration ' + e.step;
      f.appendChild(im);
      f.appendChild(cap);
      box.appendChild(f);
    });
    state.compared = shown.length;
  }

  /* ---- images: one step slider for every panel, an A/B split over the eval output ---- */
  var images = { steps: [], visual: [], evals: [], refs: [], split: 0.5, a: null, b: null,
                 painted: 0 };
  var imgCache = {};
  function $(id) { return document.getElementById(id); }
  function loadImage(url) {
    if (!imgCache[url]) {
      imgCache[url] = new Promise(function (ok, fail) {
        var im = new Image();
        im.onload = function () { ok(im); };
        im.onerror = function () { delete imgCache[url]; fail(new Error(url)); };
        im.src = url;
      });
    }
    return imgCache[url];
  }
  function atOrBefore(sorted, step) {
    var best = null;
    for (var i = 0; i < sorted.length && sorted[i] <= step; i++) best = sorted[i];
    return best;
  }
  function evalAt(step) {           /* the latest evaluation at or before step */
    var best = null;
    images.evals.forEach(function (e) { if (e.step <= step) best = e; });
    return best;
  }
  function currentStep() { return images.steps[Number($('pf-step').value)]; }
  function refreshImages() {
    return fetch(api('/api/images')).then(function (r) {
      if (!r.ok) throw new Error('HTTP ' + r.status);
      return r.json();
    }).then(function (d) {
      var slider = $('pf-step');
      var atEnd = Number(slider.value) >= images.steps.length - 1;
      images.visual = d.visuals.steps;
      images.evals = d.eval.filter(function (e) { return e.images.length > 0; });
      images.refs = d.references || [];
      var all = {};
      images.visual.forEach(function (s) { all[s] = 1; });
      images.evals.forEach(function (e) { all[e.step] = 1; });
      images.steps = Object.keys(all).map(Number).sort(function (x, y) { return x - y; });
      slider.max = Math.max(0, images.steps.length - 1);
      slider.disabled = images.steps.length === 0;
      if (atEnd) slider.value = slider.max;
      state.images = { steps: images.steps.length, evals: images.evals.length,
                       visuals: images.visual.length };
      showStep();
    }).catch(function () {});
  }
  function showStep() {
    var step = currentStep();
    if (step === undefined) return;
    $('pf-step-label').textContent = 'iteration ' + step;
    var vs = atOrBefore(images.visual, step);
    $('pf-visual-step').textContent = vs === null ? 'none yet' : 'iteration ' + vs;
    if (vs !== null) $('pf-visual').src = api('/api/image', { kind: 'visual', step: vs });
    var e = evalAt(step), sel = $('pf-eval-name'), keep = sel.value;
    var names = e ? e.images : [];
    if (sel.dataset.names !== names.join('\n')) {
      sel.innerHTML = '';
      names.forEach(function (n) {
        var o = document.createElement('option');
        o.value = o.textContent = n;
        sel.appendChild(o);
      });
      sel.dataset.names = names.join('\n');
      if (names.indexOf(keep) >= 0) sel.value = keep;
    }
    state.evalNames = names;
    drawAB();
    showCompare();
  }
  function refURL(kind, e, name) {
    if (kind === 'prev') {
      var prev = null;
      images.evals.forEach(function (x) {
        if (x.step < e.step && x.images.indexOf(name) >= 0) prev = x;
      });
      return prev ? api('/api/image', { kind: 'eval', step: prev.step, name: name }) : null;
    }
    if (images.refs.indexOf(kind) < 0) return null;
    return api('/files/eval_visuals/' + kind + '/' + name.split('/').map(encodeURIComponent).join('/'));
  }
  var abSeq = 0;
  function drawAB() {
    var e = evalAt(currentStep()), name = $('pf-eval-name').value, kind = $('pf-eval-ref').value;
    if (!e || !name) return;
    var seq = ++abSeq, bURL = refURL(kind, e, name);
    var aP = loadImage(api('/api/image', { kind: 'eval', step: e.step, name: name }));
    var bP = bURL ? loadImage(bURL).catch(function () { return null; }) : Promise.resolve(null);
    Promise.all([aP, bP]).then(function (ab) {
      if (seq !== abSeq) return;            /* a later choice won */
      images.a = ab[0];
      images.b = ab[1];
      $('pf-ab-label').textContent = 'A: iteration ' + e.step + ' · B: ' +
        (ab[1] ? $('pf-eval-ref').selectedOptions[0].textContent : 'not available');
      var c = $('pf-ab');
      c.width = ab[0].naturalWidth;
      c.height = ab[0].naturalHeight;
      applyZoom();
      paint();
    }).catch(function () {});
  }
  function applyZoom() {
    var c = $('pf-ab'), z = $('pf-zoom').value;
    c.classList.toggle('fit', z === 'fit');
    c.style.width = z === 'fit' ? '' : (c.width * Number(z)) + 'px';
  }
  function paint() {
    var c = $('pf-ab'), g = c.getContext('2d'), a = images.a, b = images.b;
    if (!a) return;
    var x = Math.round(images.split * c.width);
    g.clearRect(0, 0, c.width, c.height);
    if (b) g.drawImage(b, 0, 0, c.width, c.height);
    g.save();
    g.beginPath();
    g.rect(0, 0, b ? x : c.width, c.height);
    g.clip();
    g.drawImage(a, 0, 0);
    g.restore();
    if (b) {                      /* the split line, one pixel wide */
      g.fillStyle = 'rgba(255,255,255,0.8)';
      g.fillRect(Math.min(x, c.width - 1), 0, 1, c.height);
    }
    images.painted++;
    state.ab = { split: images.split, painted: images.painted, width: c.width, height: c.height,
                 b: !!b };
  }
  function splitFrom(ev) {
    var r = $('pf-ab').getBoundingClientRect();
    images.split = Math.min(1, Math.max(0, (ev.clientX - r.left) / r.width));
    paint();
  }
  var dragging = false;
  $('pf-ab').addEventListener('mousedown', function (ev) { dragging = true; splitFrom(ev); });
  window.addEventListener('mousemove', function (ev) { if (dragging) splitFrom(ev); });
  window.addEventListener('mouseup', function () { dragging = false; });
  $('pf-step').addEventListener('input', showStep);
  $('pf-eval-name').addEventListener('change', function () { drawAB(); showCompare(); });
  $('pf-eval-ref').addEventListener('change', drawAB);
  $('pf-zoom').addEventListener('change', applyZoom);

  /* every series a chart holds, for tests: [x, y1, y2, ...] */
  window.uplotSeries = function (name) {
    return charts[name] ? charts[name].data.map(function (a) { return Array.from(a); }) : null;
  };
  /* the series a chart holds, for tests: [x, y] */
  window.uplotData = function (name) {
    return charts[name] ? [Array.from(charts[name].data[0]), Array.from(charts[name].data[1])] : null;
  };

  refreshCurves();                          /* this run's at once; the others once listed */
  loadRuns().then(function () { if (runs.length > 1) refreshCurves(); });
  refreshImages();
  setInterval(refreshImages, 10000);        /* grids appear without their own event too */
  follow();
  setInterval(refreshSnapshot, 1000);       /* liveness changes without events too */
  var resizeTimer = null;
  window.addEventListener('resize', function () {
    clearTimeout(resizeTimer);
    resizeTimer = setTimeout(refreshCurves, 300);
  });
})();
