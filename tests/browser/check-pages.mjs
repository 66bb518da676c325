// The real-browser check of decodelab's HTML pages: opens each page in Chromium (driven by
// puppeteer-core) at each window width and fails on what a reader would trip over —
//   too-wide      an element wider than its container where the container does not scroll
//                 (or the page itself scrolling sideways, or content spilling out of its box)
//   overlap       two SVG text boxes overlapping, or an SVG label cut off at the chart's edge
//   bad-number    NaN, Infinity, undefined, nan or inf in the text or an attribute
//   console       an error on the console or an exception in the page
//   network       any request besides the page itself (pages must be self-contained)
// and saves a screenshot of each page at each width.
//
// Usage: node check-pages.mjs --browser PATH [--widths 1024,1600] [--screenshots DIR]
//          [--root DIR] [--clip-height PX] [--expect KIND] PAGE.html...
// --expect KIND turns the check around (a test of the test): exit 0 only when every page
// shows a problem of that kind. Exit 77 when puppeteer-core cannot be loaded (ctest: skipped).
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

function parseArguments(argv) {
  const options = { widths: [1024, 1600], screenshots: '', root: '', clipHeight: 0, expect: '', browser: '', pages: [] };
  for (let i = 0; i < argv.length; ++i) {
    const value = () => {
      if (i + 1 >= argv.length) throw new Error(`${argv[i]} needs a value`);
      return argv[++i];
    };
    switch (argv[i]) {
      case '--browser': options.browser = value(); break;
      case '--widths': options.widths = value().split(',').map(Number); break;
      case '--screenshots': options.screenshots = value(); break;
      case '--root': options.root = value(); break;
      case '--clip-height': options.clipHeight = Number(value()); break;
      case '--expect': options.expect = value(); break;
      default:
        if (argv[i].startsWith('--')) throw new Error(`unknown option ${argv[i]}`);
        options.pages.push(argv[i]);
    }
  }
  if (!options.browser) throw new Error('--browser PATH is required');
  if (options.pages.length === 0) throw new Error('no pages given');
  if (options.widths.some((width) => !(width > 0))) throw new Error('--widths: expected numbers such as 1024,1600');
  return options;
}

// Runs inside the page: every layout and text problem, as {kind, what}.
function pageProblems() {
  const problems = [];
  const name = (element) => {
    let text = element.tagName.toLowerCase();
    if (element.id) text += `#${element.id}`;
    const classes = typeof element.className === 'string' ? element.className.trim() : '';
    if (classes) text += `.${classes.split(/\s+/).join('.')}`;
    const heading = element.closest('section')?.querySelector('h2')?.textContent;
    return heading ? `${text} (section "${heading}")` : text;
  };
  const root = document.documentElement;
  if (root.scrollWidth > window.innerWidth + 1) {
    problems.push({ kind: 'too-wide', what: `the page scrolls sideways: ${root.scrollWidth}px in a ${window.innerWidth}px window` });
  }
  const scrolls = (style) => style.overflowX === 'auto' || style.overflowX === 'scroll';
  for (const element of document.body.querySelectorAll('*')) {
    if (element.closest('svg') && element.tagName.toLowerCase() !== 'svg') continue;
    const style = getComputedStyle(element);
    if (style.display === 'none') continue;
    const parent = element.parentElement;
    if (parent) {
      const parentStyle = getComputedStyle(parent);
      const box = element.getBoundingClientRect();
      if (!scrolls(parentStyle) && (box.width > 0 || box.height > 0)) {
        const outer = parent.getBoundingClientRect();
        const left = outer.left + parseFloat(parentStyle.borderLeftWidth);
        const right = outer.right - parseFloat(parentStyle.borderRightWidth);
        if (box.right > right + 1 || box.left < left - 1) {
          problems.push({ kind: 'too-wide', what: `${name(element)} (${Math.round(box.width)}px) sticks out of ${name(parent)} (${Math.round(right - left)}px)` });
        }
      }
    }
    // Content wider than its own box (a long word, a fixed-width child) spills out unless the box scrolls.
    if (!scrolls(style) && style.display !== 'inline' && element.clientWidth > 0 && element.scrollWidth > element.clientWidth + 1
        && element.tagName.toLowerCase() !== 'svg') {
      problems.push({ kind: 'too-wide', what: `the content of ${name(element)} is ${element.scrollWidth}px wide in a ${element.clientWidth}px box` });
    }
  }
  for (const [index, svg] of [...document.querySelectorAll('svg')].entries()) {
    const frame = svg.getBoundingClientRect();
    const texts = [...svg.querySelectorAll('text')]
      .map((text) => ({ text: text.textContent.trim(), box: text.getBoundingClientRect() }))
      .filter(({ text, box }) => text && box.width > 0 && box.height > 0);
    const title = svg.closest('section')?.querySelector('h2')?.textContent ?? `svg ${index + 1}`;
    for (const { text, box } of texts) {
      if (box.left < frame.left - 1 || box.right > frame.right + 1 || box.top < frame.top - 1 || box.bottom > frame.bottom + 1) {
        problems.push({ kind: 'overlap', what: `"${text}" is cut off at the edge of the chart in "${title}"` });
      }
    }
    for (let a = 0; a < texts.length; ++a) {
      for (let b = a + 1; b < texts.length; ++b) {
        const p = texts[a].box, q = texts[b].box;
        const width = Math.min(p.right, q.right) - Math.max(p.left, q.left);
        const height = Math.min(p.bottom, q.bottom) - Math.max(p.top, q.top);
        if (width > 1 && height > 1) {
          problems.push({ kind: 'overlap', what: `"${texts[a].text}" and "${texts[b].text}" overlap (${Math.round(width)}×${Math.round(height)}px) in "${title}"` });
        }
      }
    }
  }
  const text = document.body.textContent;
  const word = text.match(/(^|[^A-Za-z])(NaN|Infinity|undefined|-?nan|-?inf)(?![A-Za-z])/);
  if (word) problems.push({ kind: 'bad-number', what: `the text says "${word[2]}": …${text.slice(Math.max(0, word.index - 40), word.index + 40).replace(/\s+/g, ' ')}…` });
  for (const element of document.querySelectorAll('*')) {
    for (const attribute of element.attributes) {
      if (/(^|[^A-Za-z])(NaN|Infinity|undefined|-?nan|-?inf)(?![A-Za-z])/.test(attribute.value) && attribute.name !== 'href') {
        problems.push({ kind: 'bad-number', what: `${name(element)} has ${attribute.name}="${attribute.value.slice(0, 80)}"` });
      }
    }
  }
  return problems;
}

async function main() {
  const options = parseArguments(process.argv.slice(2));
  let puppeteer;
  try {
    puppeteer = (await import('puppeteer-core')).default;
  } catch (error) {
    console.log(`check-pages: SKIPPED: puppeteer-core cannot be loaded (${error.message.split('\n')[0]}); run npm ci in the repository root (scripts/setup.sh with DECODELAB_SETUP_EXTRAS=browser)`);
    process.exit(77);
  }
  if (options.screenshots) fs.mkdirSync(options.screenshots, { recursive: true });
  const browser = await puppeteer.launch({
    executablePath: options.browser,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--no-first-run', '--disable-background-networking',
           '--disable-component-update', '--hide-scrollbars', '--font-render-hinting=none'],
  });
  let failures = 0;
  let pagesWithExpected = 0;
  try {
    for (const file of options.pages) {
      const url = pathToFileURL(path.resolve(file)).href;
      const relative = options.root ? path.relative(options.root, file) : file;
      let expectedSeen = false;
      for (const width of options.widths) {
        const page = await browser.newPage();
        const problems = [];
        await page.setViewport({ width, height: 900, deviceScaleFactor: 1 });
        await page.setRequestInterception(true);
        page.on('request', (request) => {
          if (request.url() === url) return request.continue();
          problems.push({ kind: 'network', what: `requests ${request.url()}` });
          return request.abort();
        });
        page.on('console', (message) => {
          if (message.type() === 'error') problems.push({ kind: 'console', what: `console error: ${message.text()}` });
        });
        page.on('pageerror', (error) => problems.push({ kind: 'console', what: `exception: ${error.message}` }));
        const response = await page.goto(url, { waitUntil: 'load' });
        if (!response || !response.ok()) problems.push({ kind: 'network', what: `the page did not load (${response?.status()})` });
        problems.push(...(await page.evaluate(pageProblems)));
        if (options.screenshots) {
          const shot = path.join(options.screenshots, `${relative.replace(/\.html$/, '').replace(/[\\/]/g, '-')}-${width}.png`);
          const height = await page.evaluate(() => document.documentElement.scrollHeight);
          await page.screenshot(options.clipHeight > 0
            ? { path: shot, clip: { x: 0, y: 0, width, height: Math.min(options.clipHeight, height) }, captureBeyondViewport: true }
            : { path: shot, fullPage: true });
        }
        await page.close();
        const seen = new Set();
        const unique = problems.filter(({ kind, what }) => !seen.has(kind + what) && seen.add(kind + what));
        if (options.expect) {
          const expected = unique.filter(({ kind }) => kind === options.expect);
          if (expected.length > 0) expectedSeen = true;
          for (const { what } of expected.slice(0, 3)) console.log(`check-pages: ${relative} at ${width}px: found, as expected: ${what}`);
          continue;
        }
        for (const { kind, what } of unique.slice(0, 12)) console.log(`check-pages: FAIL ${relative} at ${width}px [${kind}]: ${what}`);
        if (unique.length > 12) console.log(`check-pages: … and ${unique.length - 12} more problems on ${relative} at ${width}px`);
        if (unique.length > 0) ++failures;
        else console.log(`check-pages: ok ${relative} at ${width}px`);
      }
      if (options.expect && expectedSeen) ++pagesWithExpected;
      if (options.expect && !expectedSeen) console.log(`check-pages: FAIL: ${relative}: no ${options.expect} problem found, but the page has one`);
    }
  } finally {
    await browser.close();
  }
  if (options.expect) process.exit(pagesWithExpected === options.pages.length ? 0 : 1);
  console.log(`check-pages: ${options.pages.length} pages × ${options.widths.length} widths, ${failures} failed`);
  process.exit(failures > 0 ? 1 : 0);
}

main().catch((error) => {
  console.log(`check-pages: error: ${error.stack || error}`);
  process.exit(2);
});
