// The plain-page control of benchmarks/ui_fidelity (playground/ui/plain_page.py): a click
// POSTs the prompt, then appends each NDJSON line's text to its column's textarea; the last
// line ({end: true, records}) is kept as window.plainEnd for the benchmark.
const run = async () => {
  const boxes = [...document.querySelectorAll('textarea')];
  boxes.forEach((b) => { b.value = ''; });
  const r = await fetch('run', {method: 'POST', headers: {'Content-Type': 'application/json'},
    body: JSON.stringify({prompt: document.getElementById('plain-prompt').value,
                          preset: new URLSearchParams(location.search).get('preset'),
                          n: boxes.length})});
  const reader = r.body.getReader();
  const utf8 = new TextDecoder();
  let rest = '';
  for (;;) {
    const {done, value} = await reader.read();
    if (done) break;
    rest += utf8.decode(value, {stream: true});
    const lines = rest.split('\n');
    rest = lines.pop();
    for (const line of lines) {
      const d = JSON.parse(line);
      if (d.text !== undefined) boxes[d.column].value += d.text;
      if (d.end) window.plainEnd = d;
    }
  }
};
document.getElementById('plain-run').addEventListener('click', run);
