// Runs inside the page (check_pages.py hands it to the browser): every layout and text problem a
// reader would trip over, as a list of {kind, what}.
//   too-wide    an element wider than its container where the container does not scroll (or the
//               page itself scrolling sideways, or content spilling out of its own box)
//   overlap     two SVG text boxes overlapping, or an SVG label cut off at the chart's edge
//   bad-number  NaN, Infinity, undefined, nan or inf in the text or an attribute
(function pageProblems() {
  const problems = [];
  const name = (element) => {
    let text = element.tagName.toLowerCase();
    if (element.id) text += `#${element.id}`;
    const classes = typeof element.className === 'string' ? element.className.trim() : '';
    if (classes) text += `.${classes.split(/\s+/).join('.')}`;
    const section = element.closest('section');
    const heading = section && section.querySelector('h2') ? section.querySelector('h2').textContent : '';
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
  [...document.querySelectorAll('svg')].forEach((svg, index) => {
    const frame = svg.getBoundingClientRect();
    const texts = [...svg.querySelectorAll('text')]
      .map((text) => ({ text: text.textContent.trim(), box: text.getBoundingClientRect() }))
      .filter(({ text, box }) => text && box.width > 0 && box.height > 0);
    const section = svg.closest('section');
    const title = section && section.querySelector('h2') ? section.querySelector('h2').textContent : `svg ${index + 1}`;
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
  });
  const badWord = /(^|[^A-Za-z])(NaN|Infinity|undefined|-?nan|-?inf)(?![A-Za-z])/;
  const text = document.body.textContent;
  const word = text.match(badWord);
  if (word) problems.push({ kind: 'bad-number', what: `the text says "${word[2]}": …${text.slice(Math.max(0, word.index - 40), word.index + 40).replace(/\s+/g, ' ')}…` });
  for (const element of document.querySelectorAll('*')) {
    for (const attribute of element.attributes) {
      if (attribute.name !== 'href' && badWord.test(attribute.value)) {
        problems.push({ kind: 'bad-number', what: `${name(element)} has ${attribute.name}="${attribute.value.slice(0, 80)}"` });
      }
    }
  }
  return problems;
})
