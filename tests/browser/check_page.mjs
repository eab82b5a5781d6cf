// Loads a tailsweep page (a report file or the live dashboard) in Debian's
// chromium through playwright-core, and prints what it saw as one JSON line:
// {"console_errors": [...], "page_errors": [...], "charts": N,
//  "blank_charts": [ids], "pivot_rows": N, "cell_rows": N, "injected": N,
//  "smoothing_redraws": bool|null, "live_latency_ms": N|null,
//  "screenshot": path, "text": the page's text}
// Exits 0 when the page loaded; the caller (a GoogleTest) asserts on the
// numbers. Options:
//   --url URL               the page (file:// or http://)
//   --out DIR               screenshots go here
//   --header "Name: value"  sent with every request (the dashboard's token)
//   --web DIR               web/ (its node_modules has playwright-core)
//   --ready FILE --go FILE  live pages: after the first render, write FILE
//                           (ready), wait for the go FILE (the caller wrote
//                           it right after reporting a metric point at the
//                           step it holds), and time until a chart shows it
//   --report-js FILE        serve the page with this report.js in place of
//                           the one built in (the source under test, before
//                           a build); --report-css FILE: these rules added
// Also, for the dashboard's list: "sweep_columns" (its headings) and
// "sweeps" ([{cells: [texts], state_title, tags: [k=v]}]); for a sweep's
// report: "settings_text" (its settings block, null when none) and
// "artifacts" (each job's strip shown, once their lists came and their
// images loaded: [{job, label, images: [{alt, src, loaded}], links:
// [{text, href}]}]).
import {createRequire} from 'module';
import fs from 'fs';
import path from 'path';

const args = process.argv.slice(2);
const opt = (name) => {
  const i = args.indexOf('--' + name);
  return i >= 0 ? args[i + 1] : null;
};
const require = createRequire(path.join(opt('web'), 'package.json'));
const {chromium} = require('playwright-core');

const browser = await chromium.launch({
  executablePath: process.env.TAILSWEEP_CHROMIUM || '/usr/bin/chromium',
  args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
    '--disable-background-networking', '--disable-component-update',
    '--disable-sync'],
});
const out = {console_errors: [], page_errors: [], dialogs: 0};
try {
  const headers = {};
  if (opt('header')) {
    const h = opt('header');
    const cut = h.indexOf(':');
    headers[h.slice(0, cut).trim()] = h.slice(cut + 1).trim();
  }
  const context = await browser.newContext({extraHTTPHeaders: headers,
    viewport: {width: 1280, height: 900}});
  const page = await context.newPage();
  page.on('console', (m) => { if (m.type() === 'error') out.console_errors.push(m.text()); });
  page.on('pageerror', (e) => out.page_errors.push(String(e)));
  page.on('dialog', async (d) => { out.dialogs += 1; await d.dismiss(); });
  if (opt('report-js')) {
    const js = fs.readFileSync(opt('report-js'), 'utf8');
    const css = opt('report-css') ? fs.readFileSync(opt('report-css'), 'utf8') : '';
    const href = new URL(opt('url')).href;
    await page.route((u) => u.href === href, async (route) => {
      const response = await route.fetch();
      let html = await response.text();
      // report.js is the page's last script (report/page.cc).
      const start = html.lastIndexOf('<script>\n');
      const end = html.lastIndexOf('\n</script>');
      if (start < 0 || end < start) throw new Error('no script to replace in ' + href);
      html = html.slice(0, start + '<script>\n'.length) + js + html.slice(end);
      if (css) html = html.replace('</style>', () => css + '\n</style>');
      await route.fulfill({response, body: html});
    });
  }
  await page.goto(opt('url'));
  await page.waitForFunction(() => window.tailsweepReport && window.tailsweepReport.renders > 0,
      null, {timeout: 15000});
  // A live report's artifact strips: their lists asked, their images
  // loaded (lazy ones asked for now).
  await page.waitForFunction(() => (window.tailsweepReport.artifactsPending || 0) === 0,
      null, {timeout: 15000});
  await page.evaluate(async () => {
    for (const img of document.querySelectorAll('div.artifacts img')) {
      img.loading = 'eager';
      if (!img.complete) {
        await new Promise((r) => { img.onload = r; img.onerror = r; setTimeout(r, 5000); });
      }
    }
  });
  const seen = () => page.evaluate(() => {
    const charts = Array.from(document.querySelectorAll('figure.chart'));
    const drawn = charts.filter((f) => f.querySelector('canvas'));
    const blank = drawn.filter((f) => {
      const c = f.querySelector('canvas');
      const px = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
      let inked = 0;
      for (let i = 3; i < px.length; i += 4) if (px[i] > 0) inked += 1;
      return inked < 50;
    }).map((f) => f.dataset.chart);
    const steps = drawn.map((f) => Number(f.dataset.lastStep || 0));
    return {
      charts: drawn.length,
      empty_charts: charts.length - drawn.length,
      blank_charts: blank,
      pivot_rows: document.querySelectorAll('table.pivot tbody tr').length,
      cell_rows: document.querySelectorAll('table.cells tbody tr').length,
      sweep_rows: document.querySelectorAll('table.results tbody tr').length,
      // Markup from the data must never become elements.
      injected: document.querySelectorAll('img[src="x"], .tailsweep-injected').length,
      text: document.body.innerText,
      max_step: steps.length ? Math.max(...steps) : 0,
      sweep_columns: Array.from(document.querySelectorAll('table.sweeps thead th')).map((th) => th.textContent),
      sweeps: Array.from(document.querySelectorAll('table.sweeps tbody tr')).map((tr) => ({
        cells: Array.from(tr.children).map((td) => td.textContent),
        state_title: (tr.querySelector('td.state') || {}).title || '',
        tags: Array.from(tr.querySelectorAll('.tag')).map((t) => t.textContent),
      })),
      settings_text: (document.querySelector('.sweep-settings') || {}).innerText || null,
      artifacts: Array.from(document.querySelectorAll('div.artifacts:not([hidden])')).map((d) => ({
        job: d.dataset.job,
        label: (d.querySelector('.label') || {}).textContent || '',
        images: Array.from(d.querySelectorAll('img')).map((i) => ({
          alt: i.alt, src: i.getAttribute('src'), loaded: i.complete && i.naturalWidth > 0})),
        links: Array.from(d.querySelectorAll('a.artifact')).map((a) => ({
          text: a.textContent, href: a.getAttribute('href')})),
      })),
    };
  });
  Object.assign(out, await seen());
  // The smoothing slider redraws the smoothed curves.
  out.smoothing_redraws = await page.evaluate(() => {
    const slider = document.getElementById('smoothing');
    const smoothed = Object.values(window.tailsweepReport.charts)
        .find((c) => c.options.smooth);
    if (!slider || !smoothed) return null;
    const before = JSON.stringify(smoothed.plot.data);
    slider.value = '0';
    slider.dispatchEvent(new Event('input'));
    const after = JSON.stringify(smoothed.plot.data);
    slider.value = '0.6';
    slider.dispatchEvent(new Event('input'));
    return before !== after;
  });
  out.screenshot = path.join(opt('out'), 'page.png');
  await page.screenshot({path: out.screenshot, fullPage: true});
  out.live_latency_ms = null;
  if (opt('ready')) {
    fs.writeFileSync(opt('ready'), 'ready\n');
    const deadline = Date.now() + 60000;
    while (!fs.existsSync(opt('go')) && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 10));
    }
    const t0 = Date.now();
    const step = Number(fs.readFileSync(opt('go'), 'utf8'));
    await page.waitForFunction((s) => Array.from(document.querySelectorAll('figure.chart'))
        .some((f) => Number(f.dataset.lastStep) === s), step, {timeout: 10000, polling: 50});
    out.live_latency_ms = Date.now() - t0;
    await page.screenshot({path: path.join(opt('out'), 'live-after.png'), fullPage: true});
  }
} finally {
  await browser.close();
}
console.log(JSON.stringify(out));
