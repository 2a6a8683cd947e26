// The catalogue page in headless Chromium, driven by puppeteer-core (no browser download: Debian's chromium).
//
//   node test_site.mjs --page build/catalogue/site/index.html --index build/catalogue/index.json \
//        --screenshot build/catalogue/site.png [--chromium /usr/bin/chromium]
//
// Checks: the page loads from disk with no console error, no page error and no network request other than
// the file itself; every entry of the index shows, with its install line and one compatibility badge per row;
// the search box, the capability filter and the hardware filter narrow the list to exactly the entries they
// should (computed here from the index, not from the page). Writes a full-page screenshot.
// Exit status: 0 passed, 1 failed, 77 skipped (no chromium or no puppeteer-core: the reason is printed).
import fs from 'node:fs';
import path from 'node:path';
import {pathToFileURL} from 'node:url';

const args = Object.fromEntries(process.argv.slice(2).reduce((pairs, a, i, all) =>
  a.startsWith('--') ? pairs.concat([[a.slice(2), all[i + 1]]]) : pairs, []));
for (const need of ['page', 'index', 'screenshot']) {
  if (!args[need]) { console.error(`test_site.mjs: --${need} is required`); process.exit(2); }
}
const chromium = args.chromium || ['/usr/bin/chromium', '/usr/bin/chromium-browser'].find(p => fs.existsSync(p));
if (!chromium || !fs.existsSync(chromium)) {
  console.log('SKIP: chromium is not installed (apt-get install chromium) — the catalogue page was not tested');
  process.exit(77);
}
let puppeteer;
try {
  puppeteer = (await import('puppeteer-core')).default;
} catch (e) {
  console.log('SKIP: puppeteer-core is not installed (npm ci --prefix tests/catalogue/client): ' + e.message);
  process.exit(77);
}

const failures = [];
function check(cond, what) {
  console.log((cond ? 'ok: ' : 'FAIL: ') + what);
  if (!cond) failures.push(what);
}

const index = JSON.parse(fs.readFileSync(args.index, 'utf8'));
const pageUrl = pathToFileURL(path.resolve(args.page)).href;
const browser = await puppeteer.launch({
  executablePath: chromium, headless: true,
  args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--no-first-run'],
});
try {
  const page = await browser.newPage();
  await page.setViewport({width: 1100, height: 900});
  const consoleErrors = [], pageErrors = [], requests = [];
  page.on('console', m => { if (m.type() === 'error' || m.type() === 'warning') consoleErrors.push(m.text()); });
  page.on('pageerror', e => pageErrors.push(String(e)));
  page.on('request', r => requests.push(r.url()));
  const response = await page.goto(pageUrl, {waitUntil: 'load'});
  check(response === null || response.ok(), `the page loads from ${pageUrl}`);
  await page.waitForSelector('#entries article');

  const names = index.entries.map(e => e.name).sort();
  const visible = async () => (await page.$$eval('#entries article', as =>
    as.filter(a => !a.hidden).map(a => a.dataset.name))).sort();
  check(JSON.stringify(await visible()) === JSON.stringify(names), `every entry shows: ${names.join(', ')}`);
  for (const e of index.entries) {
    const card = await page.$eval(`#entry-${e.name}`, a => ({
      text: a.textContent, badges: [...a.querySelectorAll('.compat .badge')].map(b => b.dataset.api),
      install: a.querySelector('.install').textContent}));
    check(card.text.includes(e.description), `${e.name}: shows its description`);
    check(JSON.stringify(card.badges) === JSON.stringify(e.compatibility.map(r => r.api_version)),
          `${e.name}: one compatibility badge per row (${card.badges.join(', ')})`);
    check(card.install.includes('cmake -S gufo -B build') &&
          (e.repository.startsWith('gufo:') ? card.install.includes('GUFO_EXTENSION_DIRS=gufo/' + e.repository.slice(5))
                                            : card.install.includes('GUFO_EXTENSION_DIRS=')),
          `${e.name}: install line "${card.install}"`);
    check(e.providers.every(p => card.text.includes(p.id)), `${e.name}: lists its providers`);
  }
  const count = await page.$eval('#count', n => n.textContent);
  check(count.startsWith(`Showing ${names.length} of ${names.length}`), `the count says so: "${count}"`);

  // Filters: what each should leave, computed from the index.
  const expect = f => index.entries.filter(f).map(e => e.name).sort();
  for (const cap of index.capabilities) {
    await page.select('#capability', cap);
    const want = expect(e => e.providers.some(p => p.capability === cap));
    check(JSON.stringify(await visible()) === JSON.stringify(want), `capability ${cap} shows ${want.join(', ')}`);
  }
  await page.select('#capability', '');
  for (const hw of index.hardware) {
    await page.select('#hardware', hw);
    const want = expect(e => e.hardware_tested.includes(hw));
    check(JSON.stringify(await visible()) === JSON.stringify(want), `hardware ${hw} shows ${want.join(', ')}`);
  }
  await page.select('#hardware', '');
  const target = index.entries[0];
  await page.type('#search', target.providers[0].id);
  const want = expect(e => e.providers.some(p => p.id.includes(target.providers[0].id)) ||
                           e.description.toLowerCase().includes(target.providers[0].id));
  check(JSON.stringify(await visible()) === JSON.stringify(want),
        `searching "${target.providers[0].id}" shows ${want.join(', ')}`);
  await page.$eval('#search', n => { n.value = ''; });
  await page.type('#search', 'zz-no-such-extension');
  check((await visible()).length === 0 && await page.$eval('.empty', n => !n.hidden),
        'a search that matches nothing shows none and says so');
  await page.$eval('#search', n => { n.value = ''; n.dispatchEvent(new Event('input')); });
  check(JSON.stringify(await visible()) === JSON.stringify(names), 'clearing the search shows every entry again');

  const foreign = requests.filter(u => u !== pageUrl && !u.startsWith('data:'));
  check(foreign.length === 0, `no request besides the page itself${foreign.length ? ': ' + foreign.join(', ') : ''}`);
  check(consoleErrors.length === 0, `no console errors or warnings${consoleErrors.length ? ': ' + consoleErrors.join(' | ') : ''}`);
  check(pageErrors.length === 0, `no page errors${pageErrors.length ? ': ' + pageErrors.join(' | ') : ''}`);

  fs.mkdirSync(path.dirname(path.resolve(args.screenshot)), {recursive: true});
  await page.screenshot({path: args.screenshot, fullPage: true});
  console.log(`screenshot: ${args.screenshot}`);
} finally {
  await browser.close();
}
if (failures.length) {
  console.log(`${failures.length} check(s) failed`);
  process.exit(1);
}
console.log('catalogue page: all checks passed');
