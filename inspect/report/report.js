// The HTML report's script (inspect/render_html.cpp places it after the report's data): it reads
// the JSON of report_data_json from the script element with id report-data and draws the layer x
// head grid, the selected map's heatmap with tooltips, the head view and the step slider. It sets
// data-first-render-ms (grid and heatmap drawn) and data-head-view-ms on the body element
// (performance.now() at those moments) for the benchmark.
(function () {
  'use strict';
  const $ = (id) => document.getElementById(id);
  const dataElement = $('report-data');
  if (!dataElement) return;  // a report without inputs: the page says so
  const D = JSON.parse(dataElement.textContent);
  const SVG = 'http://www.w3.org/2000/svg';

  // inspect::weight_colour: five stops of viridis, linear in between, clamped to [0, 1].
  const STOPS = [[68, 1, 84], [59, 82, 139], [33, 145, 140], [94, 201, 98], [253, 231, 37]];
  function colour(w) {
    if (!(w > 0)) w = 0;
    if (w > 1) w = 1;
    const x = w * 4, i = Math.min(Math.floor(x), 3), f = x - i, a = STOPS[i], b = STOPS[i + 1];
    return [0, 1, 2].map((c) => Math.round(a[c] + (b[c] - a[c]) * f));
  }

  // Where a weight sits on the colour scale: attention weights (heads, head means) on [0, 1],
  // derived maps (saliency, rollout, flow) on their own [min, max], whose values are on other
  // scales (signed, or far below 1) and would otherwise show as one colour.
  const ownRange = (m) => m.kind !== 'head' && m.kind !== 'mean';
  function level(m, w) {
    if (!ownRange(m)) return w;
    return m.hi > m.lo ? (w - m.lo) / (m.hi - m.lo) : 0;
  }
  const shade = (m, w) => colour(level(m, w));

  // Weights: `bits`-bit codes, linear between lo and hi (inspect::quantise_weights).
  function weights(m) {
    if (m.w) return m.w;
    const bin = atob(m.data), n = m.queries.length * m.keys.length, w = new Float32Array(n);
    const scale = (m.hi - m.lo) / (m.bits === 8 ? 255 : 65535);
    if (m.bits === 8) {
      m.codes = bin;  // image() colours 8-bit maps straight from the codes
      for (let i = 0; i < n; ++i) w[i] = m.lo + bin.charCodeAt(i) * scale;
    } else {
      for (let i = 0; i < n; ++i) w[i] = m.lo + (bin.charCodeAt(2 * i) | (bin.charCodeAt(2 * i + 1) << 8)) * scale;
    }
    m.w = w;
    return w;
  }
  // One pixel per cell, drawn once per map and scaled onto the visible canvases.
  function image(m) {
    if (m.img) return m.img;
    const rows = m.queries.length, cols = m.keys.length, w = weights(m);
    const canvas = document.createElement('canvas');
    canvas.width = Math.max(cols, 1);
    canvas.height = Math.max(rows, 1);
    const ctx = canvas.getContext('2d'), im = ctx.createImageData(canvas.width, canvas.height), px = im.data;
    let lut = null;  // 8-bit maps: one colour per code
    if (m.bits === 8) {
      lut = [];
      for (let q = 0; q < 256; ++q) lut.push(shade(m, m.lo + q * (m.hi - m.lo) / 255));
    }
    const bin = m.codes;
    for (let i = 0; i < rows * cols; ++i) {
      const c = lut ? lut[bin.charCodeAt(i)] : shade(m, w[i]);
      px[4 * i] = c[0]; px[4 * i + 1] = c[1]; px[4 * i + 2] = c[2]; px[4 * i + 3] = 255;
    }
    ctx.putImageData(im, 0, 0);
    m.img = canvas;
    return canvas;
  }
  const format = (m, v) => v.toFixed(m.bits === 8 ? 3 : 4);
  // A share with `d` decimals that never reads as a bound it does not reach (0.997 is "0.99",
  // not "1.00"; 0.001 is "0.01", not "0.00").
  const fixedShare = (x, d) => {
    const unit = Math.pow(10, d);
    let shown = Math.round(x * unit) / unit;
    if (x < 1 && shown >= 1) shown = Math.floor(x * unit) / unit;
    if (x > 0 && shown <= 0) shown = Math.ceil(x * unit) / unit;
    return shown.toFixed(d);
  };

  const state = { source: 0, frame: 0, map: 0, title: null, timer: null, outline: null };
  const source = () => D.sources[state.source];
  const frame = () => source().frames[state.frame];
  const current = () => frame().maps[state.map];

  // Rows of the layer x head grid: a layer's head mean and its consecutive heads (a layer called
  // again starts a new row); derived maps (saliency, rollout, flow) form a last row.
  const inLayer = (m) => m.kind === 'head' || m.kind === 'mean';
  function gridRows(maps) {
    const rows = [];
    let row = null;
    maps.forEach((m, i) => {
      if (!inLayer(m)) return;
      if (!row || row.layer !== m.layer || row.module !== m.module || row.heads.some((j) => maps[j].head === m.head)) {
        row = { label: 'layer ' + m.layer, module: m.module, layer: m.layer, heads: [] };
        rows.push(row);
      }
      row.heads.push(i);
    });
    const derived = [];
    maps.forEach((m, i) => { if (!inLayer(m)) derived.push(i); });
    if (derived.length) rows.push({ label: 'derived', module: 'saliency, rollout, flow', heads: derived });
    return rows;
  }

  function thumbnail(m, i) {
    const fig = document.createElement('figure');
    fig.className = 'thumb';
    fig.tabIndex = 0;
    fig.dataset.map = i;
    fig.title = m.title;
    const size = 64, rows = m.queries.length, cols = m.keys.length;
    const scale = Math.min(size / Math.max(cols, 1), size / Math.max(rows, 1), 8);
    const canvas = document.createElement('canvas');
    canvas.width = Math.max(1, Math.round(cols * scale));
    canvas.height = Math.max(1, Math.round(rows * scale));
    const ctx = canvas.getContext('2d');
    if (scale >= 1) {  // enlarge: crisp cells
      ctx.imageSmoothingEnabled = false;
      if (rows && cols) ctx.drawImage(image(m), 0, 0, canvas.width, canvas.height);
    } else {  // shrink: each pixel shows the largest weight of its block, so thin peaks stay visible
      const w = weights(m), tw = canvas.width, th = canvas.height, pooled = new Float32Array(tw * th).fill(-Infinity);
      for (let r = 0; r < rows; ++r) {
        const y = Math.min(th - 1, Math.floor(r * th / rows));
        for (let c = 0; c < cols; ++c) {
          const k = y * tw + Math.min(tw - 1, Math.floor(c * tw / cols));
          if (w[r * cols + c] > pooled[k]) pooled[k] = w[r * cols + c];
        }
      }
      const im = ctx.createImageData(tw, th);
      pooled.forEach((v, k) => {
        const rgb = shade(m, v);
        im.data.set([rgb[0], rgb[1], rgb[2], 255], 4 * k);
      });
      ctx.putImageData(im, 0, 0);
    }
    fig.appendChild(canvas);
    const cap = document.createElement('figcaption');
    // head -1: a single-head layer (nn::Attention, a recurrent decoder), not one head of several.
    cap.textContent = (m.kind !== 'head' ? m.kind : m.head >= 0 ? 'head ' + m.head : 'attention') +
      (m.alignment_share != null ? ' \u00b7 ' + fixedShare(m.alignment_share, 2) : '');
    fig.appendChild(cap);
    fig.addEventListener('click', () => select(i));
    fig.addEventListener('keydown', (ev) => { if (ev.key === 'Enter' || ev.key === ' ') select(i); });
    return fig;
  }

  function drawGrid() {
    const grid = $('grid'), maps = frame().maps;
    grid.textContent = '';
    $('thumb-legend').hidden = !maps.some((m) => m.alignment_share != null);
    $('mean-hint').hidden = !maps.some((m) => m.kind === 'mean');
    for (const row of gridRows(maps)) {
      const div = document.createElement('div');
      div.className = 'grid-row';
      const label = document.createElement('div');
      label.className = 'row-label';
      label.textContent = row.label;
      label.appendChild(document.createElement('br'));
      const small = document.createElement('small');
      small.textContent = row.module;
      label.appendChild(small);
      div.appendChild(label);
      const thumbs = document.createElement('div');
      thumbs.className = 'thumbs';
      for (const i of row.heads) thumbs.appendChild(thumbnail(maps[i], i));
      div.appendChild(thumbs);
      grid.appendChild(div);
    }
  }

  // The large heatmap: one canvas, labels every `stride` tokens, red outlines on the right
  // alignment. Its geometry is kept in data-* attributes for the tooltip (and tests).
  function drawHeatmap(m) {
    const canvas = $('heatmap'), rows = m.queries.length, cols = m.keys.length;
    let ctx = canvas.getContext('2d');
    ctx.font = '11px monospace';
    const maxLabel = 150;
    const fit = (t) => {
      if (ctx.measureText(t).width <= maxLabel) return t;
      while (t.length > 1 && ctx.measureText(t + '\u2026').width > maxLabel) t = t.slice(0, -1);
      return t + '\u2026';
    };
    const widest = (labels) => labels.reduce((w, t) => Math.max(w, Math.min(maxLabel, ctx.measureText(t).width)), 8);
    const cell = Math.max(1, Math.min(28, 720 / Math.max(rows, cols, 1)));
    const stride = Math.ceil(12 / cell);
    const left = Math.ceil(widest(m.queries.filter((_, r) => r % stride === 0))) + 10;
    const top = Math.ceil(widest(m.keys.filter((_, c) => c % stride === 0))) + 10;
    canvas.width = Math.ceil(left + cols * cell + 8);
    canvas.height = Math.ceil(top + rows * cell + 8);
    Object.assign(canvas.dataset, { left, top, cell, rows, cols });
    ctx = canvas.getContext('2d');
    ctx.fillStyle = '#fff';
    ctx.fillRect(0, 0, canvas.width, canvas.height);
    if (!rows || !cols) return;
    ctx.imageSmoothingEnabled = false;
    ctx.drawImage(image(m), left, top, cols * cell, rows * cell);
    ctx.font = '11px monospace';
    ctx.fillStyle = '#222';
    ctx.textBaseline = 'middle';
    ctx.textAlign = 'right';
    for (let r = 0; r < rows; r += stride) ctx.fillText(fit(m.queries[r]), left - 4, top + (r + 0.5) * cell);
    ctx.textAlign = 'left';
    for (let c = 0; c < cols; c += stride) {
      ctx.save();
      ctx.translate(left + (c + 0.5) * cell, top - 4);
      ctx.rotate(-Math.PI / 2);
      ctx.fillText(fit(m.keys[c]), 0, 0);
      ctx.restore();
    }
    // Outlines hide small cells' colour: off by default below 4 px per cell, the user decides.
    const toggle = $('outline-toggle');
    toggle.checked = state.outline != null ? state.outline : cell >= 4;
    if (!toggle.checked) return;
    ctx.strokeStyle = 'red';
    ctx.lineWidth = cell >= 10 ? 2 : 1;
    m.right.forEach((c, r) => {
      if (c < 0 || r >= rows) return;
      if (cell >= 4) ctx.strokeRect(left + c * cell + 1, top + r * cell + 1, cell - 2, cell - 2);
      else ctx.strokeRect(left + c * cell - 1.5, top + r * cell - 1.5, cell + 3, cell + 3);
    });
  }

  // The outlined cells of a map: a right key on each row of the prediction's tokens that has a
  // target token (Task::alignment: one per target token), never on <eos>.
  const outlinedRows = (m) => m.right.filter((c, r) => c >= 0 && r < m.queries.length).length;

  // What a map's alignment share is: the outlined weights summed over the target's tokens, a
  // target token the prediction did not reach counting 0 (the mean over the outlined cells
  // when every target token has its row).
  function shareText(m) {
    const n = outlinedRows(m), total = Math.max(frame().target.length, n);
    const text = 'alignment share ' + fixedShare(m.alignment_share, 3);
    if (n < total) {
      return text + ' (the ' + n + ' outlined weights summed over the ' + total + ' target tokens; the ' +
        (total - n) + ' target tokens the prediction did not reach count 0)';
    }
    return text + ' (mean over the ' + n + ' outlined cells)';
  }

  function describe(m) {
    $('map-title').textContent = m.title;
    const parts = ['[' + m.queries.length + ' queries \u00d7 ' + m.keys.length + ' keys]'];
    if (m.alignment_share != null) parts.push(shareText(m));
    if (m.saliency_correlation != null) parts.push('Spearman correlation with saliency ' + m.saliency_correlation.toFixed(3));
    if (frame().step != null) parts.push('at step ' + frame().step);
    $('map-info').textContent = parts.join(' \u00b7 ');
    const own = ownRange(m);
    $('scale-lo').textContent = own ? 'min ' + m.lo.toPrecision(3) : '0';
    $('scale-hi').textContent = own ? 'max ' + m.hi.toPrecision(3) : '1';
    $('scale-note').textContent = own
      ? '(viridis over this map\'s own range; rows: queries, columns: keys)'
      : '(viridis; rows: queries, columns: keys)';
    $('precision').textContent = m.max_error > 0
      ? 'weights stored as ' + m.bits + '-bit per map, \u00b1' + m.max_error.toPrecision(1) +
        (!own && (m.lo < 0 || m.hi > 1) ? ' (values in [' + m.lo.toPrecision(3) + ', ' + m.hi.toPrecision(3) + ']; the scale clamps to [0, 1])' : '')
      : 'weights stored exactly (every weight is ' + m.lo + ')';
    $('symbol-legend').textContent = m.symbols ? 'labels: ' + m.symbols : '';
    $('symbol-legend').hidden = !m.symbols;
    const outlined = outlinedRows(m);
    $('outline-legend').hidden = !outlined;
    const f = frame();
    let where = '';
    // An example's maps are fed its prediction (a probe's the target, whose every row is outlined).
    if (f.step == null && f.target.length && f.prediction.length !== f.target.length) {
      where = '; the prediction has ' + f.prediction.length + ' tokens, the target ' + f.target.length +
        ': outlined are the ' + outlined + ' rows where both have a token, each at the right key of the target token' +
        ' at that step (none on <eos>)';
    }
    $('outline-text').textContent = 'outlined cells: ' + (D.legend || 'the right alignment') + where;
  }

  // The head view (BertViz-style): queries left, keys right, a line per weight >= 0.01 with
  // opacity = weight (the strongest 20000 lines of a big map). Hovering a token highlights its
  // lines and writes its weights next to the other column.
  function drawHeadView(m) {
    const box = $('headview');
    box.textContent = '';
    const rows = m.queries.length, cols = m.keys.length, w = weights(m);
    const rh = 16, top = 28, x0 = 170, x1 = 420;
    const svg = document.createElementNS(SVG, 'svg');
    svg.setAttribute('width', 640);
    svg.setAttribute('height', top + Math.max(rows, cols) * rh + 8);
    const text = (x, y, s, cls, anchor) => {
      const t = document.createElementNS(SVG, 'text');
      t.setAttribute('x', x);
      t.setAttribute('y', y);
      t.setAttribute('text-anchor', anchor);
      t.setAttribute('dominant-baseline', 'middle');
      if (cls) t.setAttribute('class', cls);
      t.textContent = s;
      svg.appendChild(t);
      return t;
    };
    text(x0 - 8, 12, 'queries', '', 'end');
    text(x1 + 8, 12, 'keys', '', 'start');
    const yq = (i) => top + (i + 0.5) * rh, yk = (j) => top + (j + 0.5) * rh;
    let cells = [];
    const lv = Float32Array.from(w, (v) => level(m, v));
    for (let i = 0; i < rows; ++i) for (let j = 0; j < cols; ++j) if (lv[i * cols + j] >= 0.01) cells.push(i * cols + j);
    if (cells.length > 20000) cells = cells.sort((a, b) => lv[b] - lv[a]).slice(0, 20000);
    const byQuery = Array.from({ length: rows }, () => []), byKey = Array.from({ length: cols }, () => []);
    const lines = document.createElementNS(SVG, 'g');
    for (const n of cells) {
      const i = Math.floor(n / cols), j = n % cols, l = document.createElementNS(SVG, 'line');
      l.setAttribute('x1', x0); l.setAttribute('y1', yq(i)); l.setAttribute('x2', x1); l.setAttribute('y2', yk(j));
      l.setAttribute('stroke-width', 2);
      l.setAttribute('stroke-opacity', Math.min(1, Math.max(0, lv[n])).toFixed(3));
      l.dataset.q = i; l.dataset.k = j;
      lines.appendChild(l);
      byQuery[i].push(l); byKey[j].push(l);
    }
    svg.appendChild(lines);
    const qLabels = [], kLabels = [], qWeights = [], kWeights = [];
    for (let i = 0; i < rows; ++i) {
      const t = text(x0 - 8, yq(i), m.queries[i], 'tok-label q', 'end');
      t.dataset.index = i;
      qLabels.push(t);
      qWeights.push(text(x0 - 4 - 130, yq(i), '', 'weight', 'end'));
    }
    for (let j = 0; j < cols; ++j) {
      const t = text(x1 + 8, yk(j), m.keys[j], 'tok-label k', 'start');
      t.dataset.index = j;
      kLabels.push(t);
      kWeights.push(text(x1 + 4 + 150, yk(j), '', 'weight', 'start'));
    }
    let active = null;
    const clear = () => {
      if (!active) return;
      svg.classList.remove('hovering');
      active.label.classList.remove('active');
      active.lines.forEach((l) => l.classList.remove('hl'));
      active.weights.forEach((t) => { t.textContent = ''; });
      active = null;
    };
    svg.addEventListener('mouseover', (ev) => {
      const t = ev.target.closest ? ev.target.closest('.tok-label') : null;
      if (!t) return;
      clear();
      const i = Number(t.dataset.index), isQuery = t.classList.contains('q');
      active = { label: t, lines: isQuery ? byQuery[i] : byKey[i], weights: isQuery ? kWeights : qWeights };
      svg.classList.add('hovering');
      t.classList.add('active');
      active.lines.forEach((l) => l.classList.add('hl'));
      active.weights.forEach((label, j) => { label.textContent = format(m, isQuery ? w[i * cols + j] : w[j * cols + i]); });
    });
    svg.addEventListener('mouseout', (ev) => {
      if (ev.target.closest && ev.target.closest('.tok-label')) clear();
    });
    box.appendChild(svg);
  }

  // The tokens of the input at the frame shown: a probe's prediction changes with the step.
  function showTokens() {
    const f = frame(), box = $('tokens'), probe = f.step != null;
    // A probe runs the model teacher-forced (the expected tokens fed in, as the attention shown
    // was recorded): each position's most likely token, not a decoded output. An example's
    // prediction is decoded (D.decoding) and its maps recorded with that prediction fed in.
    const predicted = probe ? 'teacher-forced prediction at step ' + f.step
      : 'prediction' + (D.decoding ? ' (' + D.decoding + ')' : '');
    box.textContent = '';
    const line = (id, text) => {
      const p = document.createElement('p');
      p.id = id;
      p.textContent = text;
      box.appendChild(p);
      return p;
    };
    const note = (p, text) => {
      const span = document.createElement('span');
      span.className = 'empty';
      span.textContent = text;
      p.appendChild(span);
    };
    for (const [name, tokens, id] of [['input', f.source, 'tokens-input'], ['expected', f.target, 'tokens-target'],
      [predicted, f.prediction, 'tokens-prediction']]) {
      // An empty prediction is shown as such wherever one was made (a probe, a known target,
      // a decoder named); a model that makes none (a library report's classifier) shows no line.
      const made = probe || f.target.length || D.decoding;
      if (!tokens.length && (id === 'tokens-input' || (id === 'tokens-prediction' && !made))) continue;
      const p = line(id, name + ': ');
      for (const t of tokens) {
        const span = document.createElement('span');
        span.className = 'tok';
        span.textContent = t;
        p.appendChild(span);
      }
      if (!tokens.length) note(p, id === 'tokens-target' ? '(not known)' : '(empty)');
      if (id === 'tokens-prediction' && f.target.length) {
        const right = json(f.prediction) === json(f.target);
        note(p, right ? ' \u2713 right' : ' \u2717 wrong');
      }
    }
    const fed = probe ? 'the expected tokens fed in (teacher-forced), at step ' + f.step : D.example_maps;
    if (f.maps.length && fed) line('maps-fed', 'attention recorded with ' + fed).className = 'hint';
  }
  const json = (v) => JSON.stringify(v);

  function select(i) {
    state.map = i;
    const m = current();
    state.title = m.title;
    document.querySelectorAll('.thumb').forEach((t) => t.classList.toggle('selected', Number(t.dataset.map) === i));
    describe(m);
    drawHeatmap(m);
    if (!document.body.dataset.firstRenderMs) document.body.dataset.firstRenderMs = performance.now().toFixed(1);
    drawHeadView(m);
    if (!document.body.dataset.headViewMs) document.body.dataset.headViewMs = performance.now().toFixed(1);
  }

  // The map an input opens on: where the answer is read (D.open, e.g. the cross-attention),
  // else the last layer; its head mean when it has one, else its first head.
  function openIndex(maps) {
    const layered = maps.filter(inLayer);
    if (!layered.length) return 0;
    const module = layered.some((m) => m.module === D.open) ? D.open : layered[layered.length - 1].module;
    const mean = maps.findIndex((m) => m.kind === 'mean' && m.module === module);
    return mean >= 0 ? mean : maps.findIndex((m) => m.kind === 'head' && m.module === module);
  }

  function showFrame() {
    const s = source(), f = frame();
    showTokens();
    $('steplabel').textContent = f.step != null ? 'step ' + f.step + ' (' + (state.frame + 1) + ' of ' + s.frames.length + ')' : '';
    document.querySelectorAll('.align-chart').forEach((div) => {
      const mine = s.kind === 'probe' && Number(div.dataset.probe) === s.probe;
      div.hidden = !mine;
      const svg = div.querySelector('svg.chart'), marker = div.querySelector('line.marker');
      if (!mine || !svg || !marker) return;
      const xMin = Number(svg.dataset.xMin), xMax = Number(svg.dataset.xMax);
      const l = Number(svg.dataset.plotLeft), r = Number(svg.dataset.plotRight);
      const x = l + (f.step - xMin) / (xMax - xMin) * (r - l);
      marker.setAttribute('x1', x);
      marker.setAttribute('x2', x);
      marker.setAttribute('visibility', 'visible');
    });
    const has = f.maps.length > 0;
    $('views').hidden = !has;
    $('no-maps').hidden = has;
    if (!has) {
      $('grid').textContent = '';  // no stale thumbnails of the previous input
      $('headview').textContent = '';
      return;
    }
    drawGrid();
    const i = f.maps.findIndex((m) => m.title === state.title);
    select(i >= 0 ? i : openIndex(f.maps));
  }

  function setSource(k) {
    stop();
    state.source = k;
    const s = source();
    state.frame = s.frames.length - 1;  // a probe opens at its last (most trained) step
    $('stepbox').hidden = s.kind !== 'probe';
    const slider = $('step');
    slider.max = s.frames.length - 1;
    slider.value = state.frame;
    showFrame();
  }

  function stop() {
    if (state.timer) clearInterval(state.timer);
    state.timer = null;
    $('play').textContent = 'play';
  }

  function init() {
    const chooser = $('source');
    D.sources.forEach((s, k) => {
      const o = document.createElement('option');
      o.value = k;
      o.textContent = s.label;
      chooser.appendChild(o);
    });
    chooser.addEventListener('change', () => setSource(Number(chooser.value)));
    $('step').addEventListener('input', () => {
      state.frame = Number($('step').value);
      showFrame();
    });
    $('play').addEventListener('click', () => {
      if (state.timer) return stop();
      if (state.frame >= source().frames.length - 1) state.frame = -1;
      $('play').textContent = 'pause';
      state.timer = setInterval(() => {
        if (state.frame >= source().frames.length - 1) return stop();
        $('step').value = ++state.frame;
        showFrame();
      }, 700);
    });
    const tip = $('tooltip'), canvas = $('heatmap');
    canvas.addEventListener('mousemove', (ev) => {
      const m = current(), g = canvas.dataset, rect = canvas.getBoundingClientRect();
      const x = (ev.clientX - rect.left) * canvas.width / rect.width, y = (ev.clientY - rect.top) * canvas.height / rect.height;
      const c = Math.floor((x - g.left) / g.cell), r = Math.floor((y - g.top) / g.cell);
      if (r < 0 || c < 0 || r >= m.queries.length || c >= m.keys.length) { tip.hidden = true; return; }
      tip.textContent = m.queries[r] + ' \u2192 ' + m.keys[c] + ': ' + format(m, weights(m)[r * m.keys.length + c]) +
        '\n(query ' + r + ', key ' + c + ')';
      tip.style.left = (ev.pageX + 14) + 'px';
      tip.style.top = (ev.pageY + 14) + 'px';
      tip.hidden = false;
    });
    canvas.addEventListener('mouseleave', () => { tip.hidden = true; });
    $('outline-toggle').addEventListener('change', () => {
      state.outline = $('outline-toggle').checked;
      drawHeatmap(current());
    });
    const bar = $('scale-bar'), bctx = bar.getContext('2d');
    for (let x = 0; x < bar.width; ++x) {
      const c = colour(x / (bar.width - 1));
      bctx.fillStyle = 'rgb(' + c.join(',') + ')';
      bctx.fillRect(x, 0, 1, bar.height);
    }
    setSource(0);
  }

  try {
    init();
  } catch (e) {
    const p = document.createElement('p');
    p.className = 'error';
    p.textContent = 'the report could not be drawn: ' + e;
    document.body.insertBefore(p, document.body.firstChild);
    throw e;
  }
})();
