// Test harness appended to the HTML report by test_inspect_html_browser (never part of the
// product page): after load it drives the rendered page like a user (clicks, hovers, moves the
// step slider), reads canvas pixels and computed styles, and writes a JSON verdict into
// a <pre> with id harness-verdict. window.__expect (set by the test) holds what the page must show.
(function () {
  'use strict';
  const E = window.__expect;
  const $ = (id) => document.getElementById(id);
  const pixels = (canvas) => canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height).data;
  function blank(canvas) {
    const d = pixels(canvas);
    for (let i = 4; i < d.length; i += 4) {
      if (d[i] !== d[0] || d[i + 1] !== d[1] || d[i + 2] !== d[2] || d[i + 3] !== d[3]) return false;
    }
    return true;
  }
  function hash(canvas) {
    const d = pixels(canvas);
    let h = 0;
    for (let i = 0; i < d.length; ++i) h = (h * 31 + d[i]) >>> 0;
    return canvas.width + 'x' + canvas.height + ':' + h;
  }
  const style = (l) => getComputedStyle(l).stroke + '/' + getComputedStyle(l).strokeOpacity;
  const thumbs = () => [...document.querySelectorAll('#grid .thumb')];
  const title = () => $('map-title').textContent;
  const thumb = (t) => thumbs().find((f) => f.title === t);
  const caption = (t) => { const f = thumb(t); return f ? f.querySelector('figcaption').textContent : null; };
  // A line of tokens as JSON text, to compare with the expected labels' JSON.
  const tokens = (id) => { const p = $(id); return p ? JSON.stringify([...p.querySelectorAll('.tok')].map((t) => t.textContent)) : null; };
  const json = (v) => JSON.stringify(v);
  const tokensName = (id) => { const p = $(id); return p ? p.firstChild.textContent : null; };
  const near = (px, rgb) => [0, 1, 2].every((k) => Math.abs(px[k] - rgb[k]) <= 2);
  function cellPixel(heat, r, c) {
    const g = heat.dataset, x = Number(g.left) + (c + 0.5) * Number(g.cell), y = Number(g.top) + (r + 0.5) * Number(g.cell);
    return heat.getContext('2d').getImageData(Math.floor(x), Math.floor(y), 1, 1).data;
  }
  const overlap = (a, b) => a.x < b.x + b.width && b.x < a.x + a.width && a.y < b.y + b.height && b.y < a.y + a.height;

  function attentionChecks(check) {
    const grid = thumbs().map((t) => t.querySelector('canvas'));
    check('thumbnails drawn', grid.length === E.thumbs && grid.every((c) => !blank(c)),
      { count: grid.length, blank: grid.filter(blank).length });
    const heat = $('heatmap');
    check('heatmap drawn', heat.width > 50 && !blank(heat), { width: heat.width, height: heat.height });

    // It opens where the answer is: the cross-attention's head mean, drawn as that mean.
    check('opens on the answer layer', title() === E.open.title && thumb(E.open.title).classList.contains('selected'), title());
    check('the head mean is drawn', near(cellPixel(heat, 0, 0), E.open.rgb), { got: [...cellPixel(heat, 0, 0)], want: E.open.rgb });
    const rows = [...document.querySelectorAll('#grid .grid-row')];
    const meanFirst = rows.filter((r) => { const f = r.querySelector('.thumb figcaption'); return f && /^mean/.test(f.textContent); });
    check('a head mean leads every layer row', meanFirst.length === E.open.layers, rows.map((r) => r.textContent));
    check('attention scale is 0 to 1', $('scale-lo').textContent === '0' && $('scale-hi').textContent === '1',
      [$('scale-lo').textContent, $('scale-hi').textContent]);

    // A thumbnail's number is explained, and is that map's alignment share.
    const legend = $('thumb-legend');
    check('thumbnail numbers explained', !legend.hidden && legend.offsetHeight > 0 && /alignment share/.test(legend.textContent),
      legend.textContent);
    check('thumbnail number is its share', caption(E.outlined_title) === E.outlined_caption, caption(E.outlined_title));

    // The configuration is collapsed, and opens on a click.
    const config = $('config'), table = config && config.querySelector('table');
    const seen = (e) => e.getClientRects().length > 0 && e.getBoundingClientRect().height > 0 && e.checkVisibility();
    check('configuration collapsed', config && config.tagName === 'DETAILS' && !config.open && !seen(table),
      config && { tag: config.tagName, open: config.open, rects: table.getClientRects().length, height: table.offsetHeight,
        visible: table.checkVisibility() });
    config.querySelector('summary').click();
    check('configuration opens', config.open && seen(table) && table.rows.length === E.config_rows,
      table && table.rows.length);

    thumb(E.first.title).click();
    check('first map selected', title() === E.first.title, title());

    // Cell (0, 0): its colour is inspect::weight_colour of its weight, its tooltip names it.
    const g = heat.dataset, x = Number(g.left) + 0.5 * Number(g.cell), y = Number(g.top) + 0.5 * Number(g.cell);
    const px = heat.getContext('2d').getImageData(Math.floor(x), Math.floor(y), 1, 1).data;
    check('cell colour is weight_colour', [0, 1, 2].every((k) => Math.abs(px[k] - E.first.rgb[k]) <= 2),
      { got: [px[0], px[1], px[2]], want: E.first.rgb });
    const rect = heat.getBoundingClientRect();
    heat.dispatchEvent(new MouseEvent('mousemove', { bubbles: true,
      clientX: rect.left + x * rect.width / heat.width, clientY: rect.top + y * rect.height / heat.height }));
    const tip = $('tooltip'), prefix = E.first.query + ' \u2192 ' + E.first.key + ': ';
    check('tooltip names query, key and weight', !tip.hidden && tip.textContent.startsWith(prefix) &&
      Math.abs(parseFloat(tip.textContent.slice(prefix.length)) - E.first.weight) < 1e-3, tip.textContent);
    heat.dispatchEvent(new MouseEvent('mouseleave'));
    check('tooltip hides on leave', tip.hidden, tip.textContent);

    // Head view: hovering query 0 highlights its lines, dims the others, shows its weights.
    const token = document.querySelector('#headview text.tok-label.q');
    const all = [...document.querySelectorAll('#headview line')];
    const mine = all.filter((l) => l.dataset.q === '0'), other = all.find((l) => l.dataset.q !== '0');
    const before = mine.map(style), otherBefore = other ? style(other) : null;
    token.dispatchEvent(new MouseEvent('mouseover', { bubbles: true }));
    const after = mine.map(style);
    const otherAfter = other ? getComputedStyle(other) : null;
    check('hover highlights the token lines', mine.length > 0 && after.every((s, i) => s !== before[i]) &&
      mine.every((l) => getComputedStyle(l).stroke !== otherAfter.stroke &&
        Number(getComputedStyle(l).strokeOpacity) > Number(otherAfter.strokeOpacity)), { before, after });
    check('hover dims the other lines', other !== undefined && style(other) !== otherBefore &&
      Number(otherAfter.strokeOpacity) < 0.1, otherBefore);
    const shown = [...document.querySelectorAll('#headview text.weight')].map((t) => t.textContent).filter((t) => t);
    check('hover shows the weights', shown.length === E.first.keys &&
      Math.abs(parseFloat(shown[0]) - E.first.weight) < 1e-3, shown);
    token.dispatchEvent(new MouseEvent('mouseout', { bubbles: true }));
    check('mouseout restores the lines', mine.map(style).every((s, i) => s === before[i]), mine.map(style));

    // Clicking thumbnails selects them.
    const h0 = hash(heat);
    thumb(E.second_title).click();
    check('click selects a head', title() === E.second_title && hash(heat) !== h0 &&
      thumb(E.second_title).classList.contains('selected') && !thumb(E.first.title).classList.contains('selected'), title());
    const outlined = thumbs().find((t) => t.title === E.outlined_title);
    outlined.click();
    check('outline legend', !$('outline-legend').hidden && $('outline-text').textContent.includes(E.legend),
      $('outline-text').textContent);
    check('precision legend', /16-bit per map, \u00b1/.test($('precision').textContent), $('precision').textContent);
    const saliency = thumbs().find((t) => t.title === E.saliency_title);
    check('saliency thumbnail', saliency !== undefined, thumbs().map((t) => t.title));
    saliency.click();
    check('saliency titled by module only', title() === E.saliency_title && !/head/.test(title()), title());
    // Derived maps are coloured over their own range, which the scale shows.
    const S = E.saliency;
    const shows = (id, word, v) => { const t = $(id).textContent; return t.startsWith(word + ' ') &&
      Math.abs(parseFloat(t.slice(word.length + 1)) - v) <= 0.005 * Math.abs(v) + 1e-12; };
    check('derived map scale shows its min and max', shows('scale-lo', 'min', S.lo) && shows('scale-hi', 'max', S.hi) &&
      /own range/.test($('scale-note').textContent),
      [$('scale-lo').textContent, $('scale-hi').textContent, $('scale-note').textContent]);
    const pLo = cellPixel(heat, S.min_cell[0], S.min_cell[1]), pHi = cellPixel(heat, S.max_cell[0], S.max_cell[1]);
    check('derived map spans the whole colour scale', near(pLo, S.rgb_lo) && near(pHi, S.rgb_hi),
      { lo: [...pLo], hi: [...pHi], want: [S.rgb_lo, S.rgb_hi] });
    thumb(E.rollout.title).click();
    check('rollout scale shows its min and max', shows('scale-lo', 'min', E.rollout.lo) && shows('scale-hi', 'max', E.rollout.hi),
      [$('scale-lo').textContent, $('scale-hi').textContent]);

    // Another example.
    const chooser = $('source');
    chooser.value = '1';
    chooser.dispatchEvent(new Event('change'));
    const inputs = document.querySelectorAll('#tokens p:first-child .tok').length;
    check('second example', inputs === E.second_example.tokens && thumbs().length === E.second_example.thumbs &&
      thumbs().every((t) => !blank(t.querySelector('canvas'))) && $('stepbox').hidden,
      { inputs, thumbs: thumbs().length });
    check('second example shows its own tokens', tokens('tokens-input') === json(E.second_example.input) &&
      tokens('tokens-prediction') === json(E.second_example.prediction) && tokensName('tokens-prediction') === 'prediction: ',
      [tokens('tokens-input'), tokens('tokens-prediction')]);
    check('a single-head map is captioned as attention', caption(E.second_example.single_title) === 'attention',
      caption(E.second_example.single_title));

    // The training replay: moving the step slider redraws heatmap and thumbnails.
    chooser.value = String(E.probe.source);
    chooser.dispatchEvent(new Event('change'));
    const slider = $('step');
    check('step slider shown', !$('stepbox').hidden && Number(slider.max) === E.probe.steps.length - 1 &&
      $('steplabel').textContent.startsWith('step ' + E.probe.steps[E.probe.steps.length - 1]), $('steplabel').textContent);
    const P = E.probe, last = P.steps.length - 1;
    const frameText = (k) => ({
      name: tokensName('tokens-prediction'), prediction: tokens('tokens-prediction'), input: tokens('tokens-input'),
      caption: caption(E.outlined_title), info: $('map-info').textContent });
    const shownAt = (k, t) => t.name === 'teacher-forced prediction at step ' + P.steps[k] + ': ' && t.prediction === json(P.predictions[k]) &&
      t.input === json(P.input) && t.caption === P.captions[k] &&
      t.info.includes('alignment share ' + P.shares[k]) && t.info.endsWith('at step ' + P.steps[k]);
    const outlinedProbe = thumbs().find((t) => t.title === E.outlined_title);
    outlinedProbe.click();
    const atLast = frameText(last);
    check('last step shows its own prediction and shares', shownAt(last, atLast), atLast);
    const heatLast = hash(heat), thumbLast = hash(thumbs()[0].querySelector('canvas')), infoLast = $('map-info').textContent;
    const marker = document.querySelector('.align-chart:not([hidden]) line.marker');
    const markerLast = marker ? Number(marker.getAttribute('x1')) : NaN;
    slider.value = '0';
    slider.dispatchEvent(new Event('input', { bubbles: true }));
    check('slider replays the heatmap', hash(heat) !== heatLast && title() === E.outlined_title &&
      $('map-info').textContent !== infoLast, { info: $('map-info').textContent });
    check('slider replays the thumbnails', hash(thumbs()[0].querySelector('canvas')) !== thumbLast, null);
    check('slider label', $('steplabel').textContent.startsWith('step ' + E.probe.steps[0]), $('steplabel').textContent);
    const atFirst = frameText(0);
    check('first step shows its own prediction and shares', shownAt(0, atFirst), atFirst);
    check('prediction and share change with the step', atFirst.prediction !== atLast.prediction &&
      atFirst.caption !== atLast.caption, { atFirst, atLast });
    for (let k = 0; k < P.steps.length; ++k) {  // every step, as a user drags the slider back up
      slider.value = String(k);
      slider.dispatchEvent(new Event('input', { bubbles: true }));
      const t = frameText(k);
      check('step ' + P.steps[k] + ' shows its own prediction and shares', shownAt(k, t), t);
    }
    slider.value = '0';
    slider.dispatchEvent(new Event('input', { bubbles: true }));
    const markerFirst = marker ? Number(marker.getAttribute('x1')) : NaN;
    const plotLeft = marker ? Number(marker.closest('svg.chart').dataset.plotLeft) : NaN;
    check('alignment chart marker follows the step', marker !== null && markerFirst < markerLast &&
      Math.abs(markerFirst - plotLeft) < 0.5, { markerFirst, markerLast, plotLeft });
    const alignSeries = document.querySelectorAll('.align-chart:not([hidden]) text.legend').length;
    check('alignment chart has a series per head', alignSeries === E.probe.heads, alignSeries);
  }

  function chartChecks(check) {
    const charts = [...document.querySelectorAll('#curves svg.chart')];
    check('charts', charts.length === E.charts, charts.length);
    charts.forEach((svg, k) => {
      const ticks = svg.querySelectorAll('text.y-tick').length;
      const right = Number(svg.dataset.plotRight);
      const legend = [...svg.querySelectorAll('text.legend')].map((t) => t.getBBox());
      const apart = legend.every((a, i) => legend.every((b, j) => i === j || !overlap(a, b)));
      check('chart ' + k + ' y axis and legend', ticks >= 2 && legend.length > 0 && apart &&
        legend.every((b) => b.x > right), { ticks, legend: legend.length, apart });
    });
  }

  // The faithfulness section as a reader sees it: a verdict per head, the rules, one head's
  // importances side by side with bars to scale, the histograms and the erasure curves.
  function faithfulnessChecks(check) {
    const section = $('faithfulness');
    const seen = (e) => e !== null && e.getBoundingClientRect().height > 0 && e.checkVisibility();
    check('faithfulness section shown', seen(section), null);
    const rows = [...document.querySelectorAll('#faith-heads tbody tr')];
    check('one row per head', rows.length === E.heads.length, rows.length);
    check('each head with its verdict', rows.length === E.heads.length && rows.every((r, i) =>
      r.cells[0].textContent === E.heads[i].layer && r.cells[1].textContent === E.heads[i].head &&
      r.querySelector('td.verdict').textContent === E.heads[i].verdict && seen(r.querySelector('td.verdict'))),
      rows.map((r) => r.textContent));
    check('decisive and not-explanation verdicts coloured apart', rows.length === 2 &&
      getComputedStyle(rows[0].querySelector('td.verdict')).color !== getComputedStyle(rows[1].querySelector('td.verdict')).color,
      null);
    const table = $('faith-heads'), box = table.parentElement.getBoundingClientRect();
    const right = (e) => e.getBoundingClientRect().right;
    check('the head table fits its container and the page, verdicts whole',
      right(table) <= box.right + 0.5 && box.right <= document.documentElement.clientWidth + 0.5 &&
      rows.every((r) => right(r.querySelector('td.verdict')) <= box.right + 0.5),
      { table: right(table), box: box.right, page: document.documentElement.clientWidth });
    const rules = [...document.querySelectorAll('#faith-rules li')];
    check('the rules and their thresholds shown', json(rules.map((l) => l.textContent)) === json(E.rules) && rules.every(seen),
      rules.map((l) => l.textContent));
    check('the evidence names its head', $('faith-head') !== null && $('faith-head').textContent === E.head_title,
      $('faith-head') && $('faith-head').textContent);
    const keys = [...document.querySelectorAll('#faith-importance tbody tr')];
    check('one row per key', json(keys.map((r) => r.cells[0].textContent)) === json(E.keys), keys.map((r) => r.cells[0].textContent));
    const shown = (col) => keys.map((r) => r.cells[col].textContent.trim());
    check('attention, gradient and leave-one-out side by side',
      json(shown(1)) === json(E.attention) && json(shown(2)) === json(E.gradient) && json(shown(3)) === json(E.loo),
      [shown(1), shown(2), shown(3)]);
    const widths = keys.map((r) => r.cells[1].querySelector('.bar').getBoundingClientRect().width);
    check('attention bars to scale', widths.length === E.attention_bars.length &&
      widths.every((w, i) => Math.abs(w - E.attention_bars[i]) < 0.6), widths);
    const charts = [...document.querySelectorAll('#faith-charts svg.chart')];
    check('histograms and erasure curves drawn', json(charts.map((c) => c.querySelector('title').textContent)) === json(E.chart_titles) &&
      charts.every(seen), charts.map((c) => c.querySelector('title').textContent));
    check('each histogram one outline', charts.length === 3 && [0, 1].every((k) => charts[k].querySelectorAll('polyline.series').length === 1),
      null);
    check('one erasure curve per ranking', charts.length === 3 && charts[2].querySelectorAll('polyline.series').length === 4 &&
      charts[2].querySelectorAll('text.legend').length === 4, null);
  }

  // A pure red pixel (the outline colour; viridis has none) inside row r of the heatmap.
  function redInRow(heat, r) {
    const g = heat.dataset, cell = Number(g.cell), left = Number(g.left), top = Number(g.top);
    // Inset a pixel: a neighbouring row's outline ends on the boundary.
    const d = heat.getContext('2d').getImageData(left, Math.floor(top + r * cell) + 1, Number(g.cols) * cell, Math.max(1, Math.floor(cell) - 2)).data;
    for (let i = 0; i < d.length; i += 4) if (d[i] > 200 && d[i + 1] < 60 && d[i + 2] < 60) return true;
    return false;
  }

  // What a prediction and a share are called: the decoding named, an empty prediction shown as
  // empty, right/wrong marked, the share's denominator said, no outline on <eos>.
  function honestChecks(check) {
    const chooser = $('source'), heat = $('heatmap');
    const labels = [...chooser.options].map((o) => o.textContent);
    check('input labels mark the prediction', json(labels.slice(0, E.labels.length)) === json(E.labels), labels);
    const line = () => $('tokens-prediction') ? $('tokens-prediction').textContent : null;
    check('prediction names its decoding', tokensName('tokens-prediction') === 'prediction (' + E.decoding + '): ' &&
      /\u2717 wrong$/.test(line()), line());
    check('maps say what was fed', /fed its own prediction \(free-running/.test($('maps-fed').textContent),
      $('maps-fed').textContent);
    thumb(E.short.title).click();
    check('share says what it divides by', $('map-info').textContent.includes(E.short.info), $('map-info').textContent);
    check('outline legend states the lengths', $('outline-text').textContent.includes(E.short.lengths), $('outline-text').textContent);
    check('outlined rows of the prediction', [...Array(E.short.outlined).keys()].every((r) => redInRow(heat, r)), null);
    check('no outline on <eos>', !redInRow(heat, E.short.outlined), null);
    chooser.value = String(E.probe_source);
    chooser.dispatchEvent(new Event('change'));
    const slider = $('step');
    slider.value = '0';
    slider.dispatchEvent(new Event('input', { bubbles: true }));
    check('an empty teacher-forced prediction is shown as empty',
      tokensName('tokens-prediction') === 'teacher-forced prediction at step 0: ' && tokens('tokens-prediction') === '[]' &&
      /\(empty\)/.test(line()) && $('tokens-prediction').offsetHeight > 0, line());
    check('probe maps say they are teacher-forced', /teacher-forced/.test($('maps-fed').textContent), $('maps-fed').textContent);
  }

  function run() {
    const verdict = { checks: {}, failures: [] };
    const check = (name, ok, detail) => {
      verdict.checks[name] = !!ok;
      if (!ok) verdict.failures.push(name + ': ' + JSON.stringify(detail));
    };
    try {
      if (E.mode === 'full') {
        chartChecks(check);
        attentionChecks(check);
      } else if (E.mode === 'empty') {
        const p = $('no-examples');
        check('says there are no examples', p !== null && p.offsetHeight > 0 && /no examples/.test(p.textContent), null);
      } else if (E.mode === 'odd') {
        // Every source and every map is drawn without a script error (checked by the caller).
        const chooser = $('source');
        for (let k = 0; k < chooser.options.length; ++k) {
          chooser.value = String(k);
          chooser.dispatchEvent(new Event('change'));
          thumbs().forEach((t) => t.click());
        }
        check('sources', chooser.options.length === E.sources, chooser.options.length);
        check('a source without maps says so', !$('no-maps').hidden && $('views').hidden, null);
        chooser.value = '0';
        chooser.dispatchEvent(new Event('change'));
        const first = document.querySelector('#tokens .tok');
        check('tokens are text, not markup', first !== null && first.textContent === E.first_token, first && first.textContent);
        const saliency = thumbs().find((t) => t.title === E.saliency_title);
        saliency.click();
        check('a signed derived map is scaled to its own range', /^min -/.test($('scale-lo').textContent) &&
          !/clamps/.test($('precision').textContent), [$('scale-lo').textContent, $('precision').textContent]);
      } else if (E.mode === 'faithfulness') {
        faithfulnessChecks(check);
      } else if (E.mode === 'open') {
        check('opens on the given layer', title() === E.open_title, title());
        if (E.mean_hint !== undefined) {
          const hint = $('mean-hint');
          check('"mean" is explained where a layer has a head mean', (hint.offsetParent !== null) === E.mean_hint, hint.outerHTML);
        }
        if (E.symbols !== undefined) {
          const legend = $('symbol-legend');
          check('special labels are explained', legend.offsetHeight > 0 && legend.textContent === 'labels: ' + E.symbols,
            legend.textContent);
        }
      } else if (E.mode === 'honest') {
        honestChecks(check);
      } else if (E.mode === 'no-alignment') {
        const said = document.querySelectorAll('#no-alignment');
        check('says once that no alignment is known', said.length === 1 && said[0].offsetHeight > 0, said.length);
        check('says why', said.length === 1 && said[0].textContent.includes(E.why), said.length && said[0].textContent);
        check('no alignment chart', document.querySelectorAll('.align-chart').length === 0, null);
        const chooser = $('source');
        chooser.value = String(chooser.options.length - 1);
        chooser.dispatchEvent(new Event('change'));
        check('no share on a probe', $('thumb-legend').hidden && !/alignment share/.test($('map-info').textContent) &&
          $('outline-legend').hidden, $('map-info').textContent);
      } else if (E.mode === 'charts-error') {
        const p = $('charts-error');
        check('shows the charts error', p !== null && p.offsetHeight > 0 && p.textContent.includes(E.charts_error), null);
        check('draws no curve', document.querySelectorAll('#curves svg.chart').length === 0, null);
        check('heatmap drawn', !blank($('heatmap')), null);
      }
      check('no nan shown', !/\bnan\b/i.test(document.body.innerText), null);
      // Self-contained: no element or style rule refers to another file (Chromium's resource
      // timing does not list file:// loads, so the references themselves are checked).
      const refs = [...document.querySelectorAll('[src], link, iframe, object, embed, [srcset]')].map((e) => e.outerHTML);
      for (const sheet of document.styleSheets) {
        for (const rule of sheet.cssRules) if (/url\(|@import/.test(rule.cssText)) refs.push(rule.cssText);
      }
      check('no external reference', refs.length === 0, refs);
    } catch (e) {
      verdict.failures.push('harness threw: ' + e + ' ' + e.stack);
    }
    verdict.errors = window.__harnessErrors;
    const pre = document.createElement('pre');
    pre.id = 'harness-verdict';
    pre.textContent = JSON.stringify(verdict);
    document.body.appendChild(pre);
  }
  window.addEventListener('load', () => setTimeout(run, 0));
})();
