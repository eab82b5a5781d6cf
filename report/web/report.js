// tailsweep's report page: draws a report document (report/report_data.h)
// with uPlot. Every string from the document is inserted as text (never as
// markup). Modes (body's data-mode): "file" (the document inlined in
// #report-data), "live" (fetched from data-url every second and redrawn),
// "index" (the dashboard's list of sweeps, from data-url).
'use strict';

(function () {
  const root = document.getElementById('report');
  const mode = document.body.dataset.mode;
  const url = document.body.dataset.url;
  // For people and tests: what is drawn.
  const state = (window.tailsweepReport = {renders: 0, charts: {}, error: null});
  let smoothing = 0.6;
  let lastText = null;
  let doc = null;

  const COLORS = ['#1f77b4', '#d62728', '#2ca02c', '#ff7f0e', '#9467bd',
    '#8c564b', '#e377c2', '#7f7f7f', '#bcbd22', '#17becf'];

  // el('p', {class: 'x'}, 'text', child...): strings become text nodes.
  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === null || v === undefined) continue;
      if (k === 'text') node.textContent = String(v);
      else node.setAttribute(k, String(v));
    }
    for (const c of children) {
      if (c === null || c === undefined) continue;
      node.append(typeof c === 'string' ? document.createTextNode(c) : c);
    }
    return node;
  }

  function fmt(v, digits) {
    if (v === null || v === undefined || Number.isNaN(v)) return '-';
    const d = digits === undefined ? 3 : digits;
    const a = Math.abs(v);
    if (a !== 0 && (a >= 1e4 || a < 1e-3)) return v.toExponential(2);
    return v.toFixed(d);
  }

  // A number from the document: JSON's, or the protocol's "nan", "inf" and
  // "-inf" (core/schema/json_number.h).
  const WORDS = {'nan': NaN, 'inf': Infinity, '-inf': -Infinity};
  function num(v) {
    return typeof v === 'string' && Object.prototype.hasOwnProperty.call(WORDS, v) ? WORDS[v] : v;
  }

  // The kind's results table (report_data.h's "results"), read by column
  // name: the page knows no kind.
  function column(d, name) {
    return d.results.columns.findIndex((c) => c.name === name);
  }
  function rowObject(d, row) {
    const o = {};
    d.results.columns.forEach((c, i) => { o[c.name] = c.type === 'number' ? num(row[i]) : row[i]; });
    return o;
  }
  function cellText(v, type) {
    if (v === null || v === undefined) return '';
    if (type === 'fraction') return v.count + '/' + v.of;
    if (type === 'number') {
      const x = num(v);
      return Number.isNaN(x) ? '' : (Number.isFinite(x) ? String(+x.toPrecision(4)) : String(x));
    }
    return String(v);
  }
  // Each table row's cell section, when it has one.
  function cellOfRow(d) {
    const out = new Map();
    d.cells.forEach((c, i) => { if (c.row !== null && c.row !== undefined) out.set(c.row, i); });
    return out;
  }

  function cellLabel(cell) {
    const parts = Object.entries(cell).map(([k, v]) => k + '=' + v);
    return parts.length ? parts.join(' ') : '(the only cell)';
  }

  // Debiased exponential moving average (as TensorBoard and W&B smooth);
  // nulls stay gaps and do not move the average.
  function smooth(values, weight) {
    if (weight <= 0) return values;
    let last = 0, n = 0;
    return values.map((v) => {
      if (v === null || !Number.isFinite(v)) return v;
      last = last * weight + (1 - weight) * v;
      n += 1;
      return last / (1 - Math.pow(weight, n));
    });
  }

  // Series [[steps], [values]] onto one shared x (uPlot's data layout).
  function align(list) {
    const xs = Array.from(new Set(list.flatMap((s) => s[0]))).sort((a, b) => a - b);
    const index = new Map(xs.map((x, i) => [x, i]));
    const ys = list.map((s) => {
      const y = new Array(xs.length).fill(null);
      s[0].forEach((x, i) => { y[index.get(x)] = s[1][i]; });
      return y;
    });
    return [xs, ys];
  }

  // A line chart: lines [{label, data: [[steps], [values]], color}],
  // options {log, smooth, hlines: [{y, label}], vlines: [{x, color}]}.
  function chart(id, title, lines, options) {
    const box = el('figure', {class: 'chart', 'data-chart': id});
    box.append(el('figcaption', {text: title}));
    const live = lines.filter((l) => l.data && l.data[0].length > 0);
    if (live.length === 0) {
      box.append(el('p', {class: 'empty', text: 'no points yet'}));
      return box;
    }
    const [xs, raw] = align(live.map((l) => l.data));
    box.dataset.lastStep = String(xs[xs.length - 1]);
    box.dataset.points = String(live.reduce((n, l) => n + l.data[0].length, 0));
    const o = options || {};
    const positive = (ys) => ys.map((v) => (o.log && v !== null && v <= 0 ? null : v));
    const ys = raw.map((y) => positive(o.smooth ? smooth(y, smoothing) : y));
    const width = Math.max(320, Math.min(560, (root.clientWidth || 1000) / 2 - 24));
    const opts = {
      width: width, height: 220,
      scales: {x: {time: false}, y: yScale(o)},
      series: [{label: o.xLabel || 'step'}].concat(live.map((l, i) => ({
        label: l.label, stroke: l.color || COLORS[i % COLORS.length],
        width: 1.25, spanGaps: true,
      }))),
      // Log axes label small ticks as 1e-5, not uPlot's rounded "0".
      axes: [{label: o.xLabel || 'step'}, o.log ? {values: (u, vals) => vals.map(logTick)} : {}],
      legend: {live: false},
      hooks: {draw: [(u) => {
        const ctx = u.ctx;
        ctx.save();
        ctx.lineWidth = 1;
        ctx.setLineDash([5, 4]);
        for (const h of o.hlines || []) {
          const y = u.valToPos(h.y, 'y', true);
          if (!Number.isFinite(y)) continue;
          ctx.strokeStyle = '#c00';
          ctx.beginPath();
          ctx.moveTo(u.bbox.left, y);
          ctx.lineTo(u.bbox.left + u.bbox.width, y);
          ctx.stroke();
        }
        for (const v of o.vlines || []) {
          const x = u.valToPos(v.x, 'x', true);
          if (!Number.isFinite(x)) continue;
          ctx.strokeStyle = v.color || '#000';
          ctx.beginPath();
          ctx.moveTo(x, u.bbox.top);
          ctx.lineTo(x, u.bbox.top + u.bbox.height);
          ctx.stroke();
        }
        ctx.restore();
      }]},
    };
    const plot = new uPlot(opts, [xs].concat(ys), box);
    state.charts[id] = {plot: plot, raw: raw, options: o, xs: xs,
      legend: live.map((l, i) => ({label: l.label, color: l.color || COLORS[i % COLORS.length]}))};
    const png = el('button', {type: 'button', class: 'png', text: 'PNG'});
    png.addEventListener('click', () => {
      const a = el('a', {download: id + '.png', href: plot.ctx.canvas.toDataURL('image/png')});
      a.click();
    });
    box.append(png);
    return box;
  }

  function logTick(v) {
    if (v === null || v === undefined) return '';
    return v >= 0.01 && v < 1e5 ? String(+v.toPrecision(3)) : v.toExponential(0);
  }

  // The y scale, stretched to show the horizontal lines (the threshold).
  function yScale(o) {
    const ys = (o.hlines || []).map((h) => h.y).filter((y) => y > 0 || !o.log);
    const y = o.log ? {distr: 3} : {};
    if (ys.length) {
      y.range = (u, min, max) => {
        const lo = Math.min(min, ...ys.map((v) => v * (o.log ? 0.5 : 1)));
        const hi = Math.max(max, ...ys);
        return o.log ? uPlot.rangeLog(lo, hi, 10, true) : [lo, hi];
      };
    }
    return y;
  }

  // Point clouds on symlog axes (sign(v) log(1 + |v|)), so the tails show:
  // the target in grey, the prediction in blue. Drawn on a plain canvas.
  function scatter(id, title, cloud) {
    const box = el('figure', {class: 'chart', 'data-chart': id});
    box.append(el('figcaption', {text: title}));
    const sl = (v) => Math.sign(v) * Math.log1p(Math.abs(v));
    const xy = (p) => [sl(p[0]), sl(p.length > 1 ? p[1] : 0)];
    const target = cloud.target.map(xy), prediction = cloud.prediction.map(xy);
    const all = target.concat(prediction).filter((p) => Number.isFinite(p[0]) && Number.isFinite(p[1]));
    if (all.length === 0) {
      box.append(el('p', {class: 'empty', text: 'no points'}));
      return box;
    }
    const size = 300, pad = 34, dpr = window.devicePixelRatio || 1;
    const canvas = el('canvas', {width: size * dpr, height: size * dpr,
      style: 'width:' + size + 'px;height:' + size + 'px'});
    const ctx = canvas.getContext('2d');
    ctx.scale(dpr, dpr);
    let lo = Math.min(...all.flat()), hi = Math.max(...all.flat());
    if (hi - lo < 1e-9) { lo -= 1; hi += 1; }
    const scale = (v) => pad + (v - lo) / (hi - lo) * (size - 2 * pad);
    const px = (p) => [scale(p[0]), size - scale(p[1])];
    ctx.fillStyle = '#fff';
    ctx.fillRect(0, 0, size, size);
    ctx.strokeStyle = '#ccc';
    ctx.fillStyle = '#555';
    ctx.font = '10px sans-serif';
    ctx.lineWidth = 1;
    for (let m = 0; m <= 8; ++m) {
      for (const sign of m === 0 ? [1] : [1, -1]) {
        const v = sign * (m === 0 ? 0 : Math.pow(10, m - 1));
        const t = sl(v);
        if (t < lo || t > hi) continue;
        const q = scale(t);
        ctx.beginPath(); ctx.moveTo(q, pad); ctx.lineTo(q, size - pad); ctx.stroke();
        ctx.beginPath(); ctx.moveTo(pad, size - q); ctx.lineTo(size - pad, size - q); ctx.stroke();
        const label = String(v);
        ctx.fillText(label, q - 3 * label.length, size - pad + 12);
        ctx.fillText(label, 2, size - q + 3);
      }
    }
    const dots = (points, color) => {
      ctx.fillStyle = color;
      for (const p of points) {
        if (!Number.isFinite(p[0]) || !Number.isFinite(p[1])) continue;
        const [x, y] = px(p);
        ctx.fillRect(x - 1.5, y - 1.5, 3, 3);
      }
    };
    dots(target, 'rgba(90, 90, 90, 0.6)');
    dots(prediction, 'rgba(31, 119, 180, 0.8)');
    box.append(canvas);
    box.append(el('div', {class: 'marks', text: 'grey: target, blue: prediction (' +
      cloud.prediction.length + ' points each)'}));
    const png = el('button', {type: 'button', class: 'png', text: 'PNG'});
    png.addEventListener('click', () => {
      el('a', {download: id + '.png', href: canvas.toDataURL('image/png')}).click();
    });
    box.append(png);
    return box;
  }

  function resmooth() {
    for (const c of Object.values(state.charts)) {
      if (!c.options.smooth) continue;
      const ys = c.raw.map((y) => smooth(y, smoothing).map(
          (v) => (c.options.log && v !== null && v <= 0 ? null : v)));
      c.plot.setData([c.xs].concat(ys));
    }
  }

  // Hours as the CLI writes them: "2.50 GPU-h, 0.10 CPU-h", "0 h" for none;
  // `h` has gpu_hours, cpu_hours and their preempted_ parts (numbers, or
  // the protocol's words).
  // Under 0.01 h (a short test run) with two significant digits.
  function hoursText(h) {
    const hours = (k) => Number(num(h[k])) || 0;
    const text = (v) => (v >= 0.01 || !Number.isFinite(v) ? v.toFixed(2) : v.toPrecision(2));
    const parts = [];
    if (hours('gpu_hours') > 0) parts.push(text(hours('gpu_hours')) + ' GPU-h');
    if (hours('cpu_hours') > 0) parts.push(text(hours('cpu_hours')) + ' CPU-h');
    if (parts.length === 0) return '0 h';
    const preempted = hours('preempted_gpu_hours') + hours('preempted_cpu_hours');
    return parts.join(', ') + (preempted > 0 ? ' (' + text(preempted) + ' h of it preempted)' : '');
  }

  // A sweep's tags as k=v chips, by key.
  function tagChips(tags) {
    const keys = Object.keys(tags || {}).sort();
    return el('span', {class: 'tags'}, ...keys.map((k) => el('span', {class: 'tag', text: k + '=' + tags[k]})));
  }

  // Whether a sweep leases: held (why, as its title), paused, or running
  // (finished when nothing of it is queued or running).
  function stateCell(settings, counts) {
    const s = settings || {};
    if (s.held) return el('td', {class: 'state held', title: s.held, text: 'held'});
    if (s.paused) {
      return el('td', {class: 'state paused', title: 'nothing new is leased; running jobs finish',
        text: 'paused'});
    }
    const active = Number(counts.queued || 0) + Number(counts.leased || 0) > 0;
    return el('td', {class: 'state', text: active ? 'running' : 'finished'});
  }

  // The report's sweep_settings (result_json.h's SweepSettingsJson: the
  // CLI's fields) under the title: state, priority and limits, hours,
  // tags, notes.
  function settingsBlock(ss) {
    const lines = [];
    if (ss.held) lines.push(el('p', {class: 'held', text: 'held: ' + ss.held}));
    if (ss.paused) lines.push(el('p', {class: 'paused', text: 'paused: running jobs finish, nothing new is leased'}));
    let line = 'priority ' + ss.priority;
    if (Number(ss.max_running) > 0) line += ', at most ' + ss.max_running + ' running';
    if (Number(num(ss.timeout_s)) > 0) line += ', timeout ' + num(ss.timeout_s) + ' s';
    if (Number(ss.max_failures) > 0) line += ', max_failures ' + ss.max_failures + ' (' + ss.failures + ' so far)';
    lines.push(el('p', {class: 'meta', text: line + '; ' + hoursText(ss)}));
    if (Object.keys(ss.tags || {}).length) lines.push(el('p', {class: 'meta'}, 'tags: ', tagChips(ss.tags)));
    if (ss.notes) lines.push(el('p', {class: 'notes', text: ss.notes}));
    if (ss.stop_rule) lines.push(el('p', {class: 'meta', text: 'stop rule: ' + ss.stop_rule}));
    return el('div', {class: 'sweep-settings'}, ...lines);
  }

  function header(d) {
    const s = d.sweep;
    const c = s.counts;
    // Every state the coordinator counts (core/schema/job_state.h), in its
    // order.
    const counts = (s.states || Object.keys(c)).map((k) => k + ' ' + c[k]).join(', ');
    let stopped = 0;
    let saved = 0;
    const [se, ss] = [column(d, 'stopped_early'), column(d, 'steps_saved')];
    for (const row of d.results.rows) {
      stopped += se >= 0 ? row[se] || 0 : 0;
      saved += ss >= 0 ? row[ss] || 0 : 0;
    }
    const early = stopped > 0 ? '; stopped early: ' + stopped + ' runs, ' + saved +
      ' training steps saved' : '';
    return el('header', {},
        el('h1', {text: 'Sweep ' + s.name}),
        d.sweep_settings ? settingsBlock(d.sweep_settings) : null,
        el('p', {class: 'meta', text: s.kind + ' sweep; jobs: ' + counts + early +
          '; submitted ' + new Date(s.created_ms).toISOString() +
          (mode === 'live' ? '; live, updated ' + new Date().toLocaleTimeString() : '; report made ' +
            new Date(d.generated_ms).toISOString() + ' by ' + d.generated_by)}));
  }

  // The paper's shape of a table with a headline: a row per cell without
  // the pivot's key, a column per value of it, each cell the headline.
  function pivot(d) {
    const t = d.pivot;
    const h = column(d, d.results.headline);
    const bold = column(d, 'bold');
    const sections = cellOfRow(d);
    const head = el('tr', {}, el('th', {text: t.group_by ? 'cell \\ ' + t.group_by : 'cell'}),
        ...t.columns.map((c) => el('th', {text: c})));
    const body = el('tbody', {});
    for (const row of t.rows) {
      const tr = el('tr', {}, el('th', {class: 'label', text: row.label}));
      for (const i of row.cells) {
        if (i < 0) { tr.append(el('td', {class: 'none', text: '-'})); continue; }
        const r = d.results.rows[i];
        const text = cellText(r[h], 'text');
        tr.append(el('td', {class: bold >= 0 && r[bold] === true ? 'bold' : null},
            sections.has(i) ? el('a', {href: '#cell-' + sections.get(i), text: text}) : text));
      }
      body.append(tr);
    }
    return el('section', {},
        el('h2', {text: 'Results by ' + (t.group_by || 'cell')}),
        el('p', {class: 'note', text: d.results.note + '. Each cell links to its figures.'}),
        el('table', {class: 'results pivot'}, el('thead', {}, head), body));
  }

  // The kind's table as it is: every column but display ones.
  function resultsTable(d) {
    const shown = d.results.columns.map((c, i) => [c, i]).filter(([c]) => c.role !== 'display');
    const firstKey = shown.findIndex(([c]) => c.role === 'key');
    const bold = column(d, 'bold');
    const sections = cellOfRow(d);
    const head = el('tr', {}, ...shown.map(([c]) => el('th', {text: c.name})));
    const body = el('tbody', {});
    d.results.rows.forEach((row, r) => {
      body.append(el('tr', {id: 'row-' + r, class: bold >= 0 && row[bold] === true ? 'bold' : null},
          ...shown.map(([c, i], k) => {
            const text = cellText(row[i], c.type);
            return el('td', {}, k === firstKey && sections.has(r) ?
              el('a', {href: '#cell-' + sections.get(r), text: text}) : text);
          })));
    });
    return el('section', {}, el('h2', {text: 'Results'}),
        el('p', {class: 'note', text: d.results.note}),
        el('table', {class: 'results cells'}, el('thead', {}, head), body));
  }

  // A job's curves: one chart per metric any of the cell's jobs logged, one
  // line per seed, linear y.
  function metricCharts(jobs, line, i) {
    const names = Array.from(new Set(jobs.flatMap((j) => Object.keys(j.series)))).sort();
    if (names.length === 0) return [el('p', {class: 'empty', text: 'no points yet'})];
    return names.map((name, k) => chart('metric-' + i + '-' + k, name, line(name), {smooth: true}));
  }

  // Runs that log the collapse signals (loss and spread_ratio, as train
  // jobs do): loss, spread ratio against the collapse threshold, attention
  // per layer, point clouds.
  function trainCharts(d, c, i, jobs, line, grid) {
    const onsets = jobs.flatMap((j, k) => [
      j.collapse_step !== null ? {x: j.collapse_step, color: COLORS[k % COLORS.length]} : null,
      j.diverged_step !== null ? {x: j.diverged_step, color: '#000'} : null].filter(Boolean));
    grid.append(chart('loss-' + i, 'loss (log y; dashed: collapse onset per seed)',
        line('loss'), {log: true, smooth: true, vlines: onsets}));
    // Never smoothed: the collapse rule reads the raw values against the
    // threshold drawn here, and smoothing hid a 1e-5 dip above it.
    grid.append(chart('spread-' + i, 'spread ratio (log y, unsmoothed; dashed red: collapse threshold ' +
        d.collapse_threshold + ')', line('spread_ratio'),
        {log: true, smooth: false, vlines: onsets, hlines: [{y: d.collapse_threshold}]}));
    const first = jobs.find((j) => Object.keys(j.series).some((n) => n.startsWith('attention_'))) || jobs[0];
    if (first) {
      const layers = (name) => Array.from({length: first.layers}, (_, l) => ({
        label: 'layer ' + l, data: first.series[name + '/' + l]}));
      const who = ' (seed ' + first.seed + ', per layer)';
      grid.append(chart('entropy-' + i, 'attention entropy' + who,
          layers('attention_entropy'), {vlines: onsets}));
      grid.append(chart('maxweight-' + i, 'largest attention weight' + who,
          layers('attention_max_weight'), {vlines: onsets}));
    }
    if (c.samples) {
      for (const cloud of c.samples.clouds) {
        grid.append(scatter('cloud-' + i + '-' + cloud.instance,
            'evaluation instance ' + cloud.instance + ', seed ' + c.samples.seed +
            ': prediction against target (symlog axes)', cloud));
      }
    }
  }

  // A job's artifacts on a live page (a report file has no coordinator to
  // ask): GET /api/jobs/ID/artifacts, asked once per job and state (they
  // come when an attempt ends), never for a queued job. Images as <img>,
  // other files as download links; the dashboard's cookie authenticates
  // the same-origin requests.
  const artifacts = new Map();  // job id -> {state, list (null: asking)}
  state.artifactsPending = 0;
  const IMAGE = /\.(png|jpe?g|gif|webp)$/i;

  function artifactUrl(id, name) {
    return '/api/jobs/' + encodeURIComponent(id) + '/artifacts/' +
      name.split('/').map(encodeURIComponent).join('/');
  }

  // A report file's artifacts come in the document, each image's "src" a
  // data: URI (null: past the report's budget, named only).
  function fillArtifacts(strip, label, id, list) {
    strip.hidden = list.length === 0;
    strip.replaceChildren(el('span', {class: 'label', text: label + ': '}), ...list.map((a) => {
      const title = a.name + ' (' + a.bytes + ' bytes, attempt ' + a.epoch + ')';
      if (a.src === null) {
        return el('span', {class: 'artifact', title: title,
          text: a.name + ' (not in this file: past --artifact-images-mib)'});
      }
      const inline = typeof a.src === 'string' && a.src.startsWith('data:image/');
      const href = inline ? a.src : artifactUrl(id, String(a.name));
      if (IMAGE.test(a.name)) {
        return el('figure', {class: 'artifact'},
            el('a', {href: href, target: '_blank', rel: 'noopener'},
                el('img', {src: href, alt: a.name, title: title, loading: 'lazy'})),
            el('figcaption', {text: a.name}));
      }
      return el('a', {class: 'artifact', href: href, download: String(a.name).split('/').pop(),
        title: title, text: a.name});
    }));
  }

  function artifactStrip(j, label) {
    const strip = el('div', {class: 'artifacts', 'data-job': j.id, hidden: ''});
    let entry = artifacts.get(j.id);
    if (!entry || entry.state !== j.state) {
      // Shown as they were until the new answer comes.
      entry = {state: j.state, list: entry ? entry.list : null};
      artifacts.set(j.id, entry);
      const mine = entry;
      state.artifactsPending += 1;
      fetch('/api/jobs/' + encodeURIComponent(j.id) + '/artifacts', {credentials: 'same-origin', cache: 'no-store'})
          .then((r) => (r.ok ? r.json() : {artifacts: []}))
          .catch(() => ({artifacts: []}))
          .then((got) => {
            state.artifactsPending -= 1;
            mine.list = got.artifacts || [];
            if (artifacts.get(j.id) !== mine) return;
            for (const s of document.querySelectorAll('div.artifacts')) {
              if (s.dataset.job === j.id) fillArtifacts(s, s.dataset.label, j.id, mine.list);
            }
          });
    }
    strip.dataset.label = label;
    if (entry.list !== null) fillArtifacts(strip, label, j.id, entry.list);
    return strip;
  }

  function cellSection(d, i) {
    const c = d.cells[i];
    const jobs = c.jobs.map((j) => d.jobs[j]);
    const h = column(d, d.results.headline);
    const done = jobs.filter((j) => j.state === 'done').length;
    const headline = h >= 0 && c.row !== null ? cellText(d.results.rows[c.row][h], 'text') + '; ' : '';
    const sec = el('section', {class: 'cell', id: 'cell-' + i},
        el('h3', {text: cellLabel(c.cell)}),
        el('p', {class: 'marks', text: headline + done + ' of ' + jobs.length + ' jobs done'}));
    const line = (name) => jobs.map((j, k) => ({
      label: 'seed ' + (j.seed || k), data: j.series[name], color: COLORS[k % COLORS.length]}));
    const grid = el('div', {class: 'charts'});
    const collapseSignals = jobs.some((j) => j.series.loss && j.series.spread_ratio);
    if (collapseSignals) trainCharts(d, c, i, jobs, line, grid);
    else grid.append(...metricCharts(jobs, line, i));
    sec.append(grid);
    const stripLabel = (j, k) => 'job ' + j.id.slice(0, 12) +
        (jobs.length > 1 ? ' (seed ' + (j.seed || k) + ')' : '') + ' artifacts';
    if (mode === 'live') {
      jobs.forEach((j, k) => {
        if (j.state !== 'queued') sec.append(artifactStrip(j, stripLabel(j, k)));
      });
    } else {
      jobs.forEach((j, k) => {
        if (Array.isArray(j.artifacts) && j.artifacts.length > 0) {
          const strip = el('div', {class: 'artifacts', 'data-job': j.id});
          fillArtifacts(strip, stripLabel(j, k), j.id, j.artifacts);
          sec.append(strip);
        }
      });
    }
    const failed = jobs.filter((j) => j.last_error);
    for (const j of failed) {
      sec.append(el('p', {class: 'error'}, 'job ' + j.id.slice(0, 12) + ' (' + j.state + '): ',
          el('code', {text: j.last_error})));
    }
    return sec;
  }

  // A tail testbed's table (columns seam, n, index, ed_noise, w2_noise):
  // its figure and rows.
  function isTestbed(d) {
    return ['seam', 'n', 'index', 'ed_noise', 'w2_noise'].every((k) => column(d, k) >= 0);
  }

  function tailsSection(d) {
    const tails = d.results.rows.map((r) => rowObject(d, r));
    const sec = el('section', {}, el('h2', {text: 'Tail testbed: distance in noise units against the tail index'}),
        el('p', {class: 'note', text: 'One panel per seam quantile, one line per budget n ' +
          '((mean at a - mean at a*) / sd at a*).'}));
    const seams = Array.from(new Set(tails.map((r) => r.seam))).sort((a, b) => a - b);
    const grid = el('div', {class: 'charts'});
    for (const seam of seams) {
      const rows = tails.filter((r) => r.seam === seam);
      const ns = Array.from(new Set(rows.map((r) => r.n))).sort((a, b) => a - b);
      for (const metric of ['ed_noise', 'w2_noise']) {
        const lines = ns.map((n) => {
          const rs = rows.filter((r) => r.n === n).sort((a, b) => a.index - b.index);
          return {label: 'n=' + n, data: [rs.map((r) => r.index), rs.map((r) => r[metric])]};
        });
        grid.append(chart(metric + '-' + seam, (metric === 'ed_noise' ? 'energy distance' : 'W2') +
            ' (noise units), seam q0=' + seam, lines, {xLabel: 'tail index a'}));
      }
    }
    sec.append(grid);
    const cols = ['seam', 'n', 'index', 'ed_noise', 'w2_noise', 'ed_mean', 'w2_mean', 'seeds'];
    const body = el('tbody', {});
    for (const r of tails) body.append(el('tr', {}, ...cols.map((k) => el('td', {text: fmt(r[k], Number.isInteger(r[k]) ? 0 : 3)}))));
    sec.append(el('table', {class: 'results tails'},
        el('thead', {}, el('tr', {}, ...cols.map((k) => el('th', {text: k})))), body));
    return sec;
  }

  // A boundary sweep's phase diagram: per cell, the fraction of runs that
  // showed the outcome at each probe point (95% Wilson interval as a bar),
  // the bracket shaded, 1/2 dashed; cells side by side on the same axes.
  function searchSection(d) {
    const s = d.search;
    const W = 280, H = 170, L = 34, R = 8, T = 22, B = 30;
    const lx = (v) => (s.log_scale ? Math.log(v) : v);
    const X = (v) => L + (lx(v) - lx(s.lo)) / (lx(s.hi) - lx(s.lo)) * (W - L - R);
    const Y = (f) => T + (1 - f) * (H - T - B);
    const NS = 'http://www.w3.org/2000/svg';
    const svg = (tag, attrs, text) => {
      const n = document.createElementNS(NS, tag);
      for (const [k, v] of Object.entries(attrs)) n.setAttribute(k, String(v));
      if (text !== undefined) n.textContent = text;
      return n;
    };
    const grid = el('div', {class: 'phase'});
    for (const c of s.cells) {
      const label = Object.keys(c).filter((k) => !['state', 'estimate', 'bracket_lo',
        'bracket_hi', 'runs', 'probes'].includes(k)).map((k) => k + '=' + c[k]).join(' ');
      const g = svg('svg', {width: W, height: H, viewBox: '0 0 ' + W + ' ' + H, class: 'phase-cell'});
      g.append(svg('text', {x: L, y: 14, 'font-size': 11}, (label || 'all') + ': ' + c.state +
        (c.estimate !== null ? ', boundary ' + fmt(c.estimate) : '')));
      if (c.bracket_lo !== null && c.bracket_hi !== null) {
        g.append(svg('rect', {x: X(c.bracket_lo), y: T, width: Math.max(1, X(c.bracket_hi) - X(c.bracket_lo)),
          height: H - T - B, fill: '#fdd', class: 'bracket'}));
      }
      g.append(svg('line', {x1: L, x2: W - R, y1: Y(0.5), y2: Y(0.5), stroke: '#999', 'stroke-dasharray': '3 3'}));
      g.append(svg('line', {x1: L, x2: L, y1: T, y2: H - B, stroke: '#333'}));
      g.append(svg('line', {x1: L, x2: W - R, y1: H - B, y2: H - B, stroke: '#333'}));
      for (const f of [0, 0.5, 1]) {
        g.append(svg('text', {x: L - 4, y: Y(f) + 4, 'font-size': 9, 'text-anchor': 'end'}, String(f)));
      }
      g.append(svg('text', {x: L, y: H - 6, 'font-size': 9}, fmt(s.lo)));
      g.append(svg('text', {x: W - R, y: H - 6, 'font-size': 9, 'text-anchor': 'end'}, fmt(s.hi)));
      g.append(svg('text', {x: (L + W - R) / 2, y: H - 6, 'font-size': 9, 'text-anchor': 'middle'}, s.key));
      for (const p of c.probes) {
        if (p.n === 0 || p.x === null) continue;
        const x = X(p.x);
        g.append(svg('line', {x1: x, x2: x, y1: Y(p.high), y2: Y(p.low), stroke: '#1f77b4'}));
        const dot = svg('circle', {cx: x, cy: Y(p.yes / p.n), r: 3.5, fill: '#1f77b4', class: 'probe'});
        dot.append(svg('title', {}, s.key + ' ' + p.value + ': ' + p.yes + '/' + p.n + ' ' + s.outcome +
          (p.pending ? ' (+' + p.pending + ' running)' : '')));
        g.append(dot);
      }
      grid.append(g);
    }
    const runs = s.cells.reduce((a, c) => a + c.runs, 0);
    return el('section', {class: 'search'},
        el('h2', {text: 'Where "' + s.outcome + '" flips along ' + s.key}),
        el('p', {class: 'note', text: 'Fraction of runs showing it at each probe point (bar: 95% ' +
          'Wilson interval); shaded: the bracket; the boundary is its midpoint. ' + runs +
          ' runs in all.'}),
        grid);
  }

  function specSection(d) {
    const s = d.sweep;
    const versions = Array.from(new Set((d.jobs || []).map((j) => j.version).filter(Boolean)));
    const fixed = el('tbody', {});
    for (const [k, v] of Object.entries(s.fixed)) fixed.append(el('tr', {}, el('th', {text: k}), el('td', {text: v})));
    return el('section', {class: 'spec'}, el('h2', {text: 'Spec and software'}),
        el('p', {text: 'Expanded by ' + (s.version || 'an unrecorded version') +
          (versions.length ? '; jobs ran on ' + versions.join(', ') : '') + '.'}),
        el('h3', {text: 'Fixed values'}), el('table', {class: 'fixed'}, fixed),
        el('h3', {text: 'Spec as submitted'}), el('pre', {text: s.spec || '(not recorded)'}));
  }

  // Curves' values the protocol spells as words ("inf": an infinity) are
  // gaps in a chart.
  function plottable(d) {
    for (const j of d.jobs || []) {
      for (const s of Object.values(j.series || {})) {
        s[1] = s[1].map((v) => (typeof v === 'string' ? null : v));
      }
    }
  }

  function render(d) {
    state.charts = {};
    plottable(d);
    const parts = [header(d)];
    if (isTestbed(d)) {
      parts.push(d.results.rows.length ? tailsSection(d) : el('p', {class: 'empty', text: 'No results yet.'}));
    } else {
      const controls = el('p', {class: 'controls'}, 'smoothing ');
      const slider = el('input', {type: 'range', min: '0', max: '0.99', step: '0.01', value: String(smoothing), id: 'smoothing'});
      const shown = el('span', {text: smoothing.toFixed(2)});
      slider.addEventListener('input', () => {
        smoothing = Number(slider.value);
        shown.textContent = smoothing.toFixed(2);
        resmooth();
      });
      controls.append(slider, ' ', shown);
      if (d.search) parts.push(searchSection(d));
      if (d.pivot) parts.push(pivot(d));
      parts.push(resultsTable(d), controls);
      d.cells.forEach((_, i) => parts.push(cellSection(d, i)));
    }
    parts.push(specSection(d));
    const y = window.scrollY;
    root.replaceChildren(...parts);
    window.scrollTo(0, y);
    state.renders += 1;
  }

  // The dashboard's list (GET /api/sweeps): per sweep its state, priority,
  // counts, device hours and tags; its notes as the name's title. A
  // coordinator before the settings sends none: '-'.
  function renderIndex(list) {
    const body = el('tbody', {});
    for (const s of list.sweeps || []) {
      const c = s.counts || {};
      const settings = c.settings;
      body.append(el('tr', {'data-sweep': s.name},
          el('td', {}, el('a', {href: 'sweeps/' + encodeURIComponent(s.name), text: s.name,
            title: settings && settings.notes ? settings.notes : null})),
          el('td', {text: s.kind}),
          settings ? stateCell(settings, c) : el('td', {class: 'state', text: '-'}),
          el('td', {class: 'priority', text: settings ? String(settings.priority) : '-'}),
          ...['queued', 'leased', 'done', 'failed', 'cancelled'].map((k) => el('td', {text: String(c[k] || 0)})),
          el('td', {class: 'hours', text: c.hours ? hoursText(c.hours) : '-'}),
          el('td', {}, settings ? tagChips(settings.tags) : null)));
    }
    const columns = ['sweep', 'kind', 'state', 'priority', 'queued', 'leased', 'done', 'failed', 'cancelled',
      'hours', 'tags'];
    root.replaceChildren(el('h1', {text: 'tailsweep sweeps'}),
        el('table', {class: 'results sweeps'}, el('thead', {}, el('tr', {}, ...columns.map((k) => el('th', {text: k})))), body));
    state.renders += 1;
  }

  function fail(message) {
    state.error = message;
    const p = el('p', {class: 'error', id: 'fetch-error', text: message});
    const old = document.getElementById('fetch-error');
    if (old) old.replaceWith(p); else root.prepend(p);
  }

  // Every second, or 4x as long as the last answer took, so that a big
  // sweep's page costs the coordinator at most about a fifth of its time.
  async function poll() {
    const started = Date.now();
    try {
      const r = await fetch(url, {credentials: 'same-origin', cache: 'no-store'});
      const text = await r.text();
      if (!r.ok) {
        fail('The coordinator answered ' + r.status + ': ' + text);
      } else if (text !== lastText) {
        lastText = text;
        state.error = null;
        const d = JSON.parse(text);
        if (mode === 'index') renderIndex(d); else { doc = d; render(d); }
      }
    } catch (e) {
      fail('Cannot reach the coordinator: ' + e.message);
    }
    setTimeout(poll, Math.max(1000, 4 * (Date.now() - started)));
  }

  // `tailsweep report --images`: every figure as a PNG with its title and
  // legend, listed in <pre id="tailsweep-images"> as "id<TAB>data URL" lines
  // for the command to read from chromium's --dump-dom.
  function exportImages() {
    const lines = [];
    for (const fig of document.querySelectorAll('figure.chart')) {
      const src = fig.querySelector('canvas');
      if (!src) continue;
      const scale = src.width / (src.clientWidth || src.width);
      const title = fig.querySelector('figcaption').textContent;
      const drawn = state.charts[fig.dataset.chart];
      const legend = drawn ? drawn.legend : [];
      const note = fig.querySelector('.marks');
      const out = document.createElement('canvas');
      const head = 28 * scale, foot = 24 * scale;
      out.width = src.width;
      out.height = src.height + head + foot;
      const ctx = out.getContext('2d');
      ctx.fillStyle = '#fff';
      ctx.fillRect(0, 0, out.width, out.height);
      ctx.fillStyle = '#222';
      ctx.font = (13 * scale) + 'px sans-serif';
      ctx.fillText(title, 6 * scale, 18 * scale, out.width - 12 * scale);
      ctx.drawImage(src, 0, head);
      let x = 6 * scale;
      ctx.font = (11 * scale) + 'px sans-serif';
      const y = head + src.height + 16 * scale;
      for (const l of legend) {
        ctx.fillStyle = l.color || '#000';
        ctx.fillRect(x, y - 8 * scale, 10 * scale, 3 * scale);
        x += 14 * scale;
        ctx.fillStyle = '#222';
        ctx.fillText(l.label, x, y);
        x += ctx.measureText(l.label).width + 12 * scale;
      }
      if (note && legend.length === 0) ctx.fillText(note.textContent, x, y);
      lines.push(fig.dataset.chart + '\t' + out.toDataURL('image/png'));
    }
    const pre = el('pre', {id: 'tailsweep-images', text: lines.join('\n')});
    document.body.append(pre);
  }

  if (mode === 'file') {
    doc = JSON.parse(document.getElementById('report-data').textContent);
    render(doc);
    // After uPlot's first draw.
    if (location.hash === '#export-images') setTimeout(exportImages, 100);
  } else {
    poll();
  }
})();
