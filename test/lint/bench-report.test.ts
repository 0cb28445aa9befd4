// A rewrite of docs/BENCHMARKS.md by `npm run bench -- --report` keeps every measurement recorded
// by hand (bench/report/kept-sections.ts): checked against the repository's own file, as if every
// family were run again, and on a small file with each kind of section.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { generatedLength, GENERATED_END, keptSections, splitSections } from '../../bench/report/kept-sections.js';
import { loadFamilies } from '../../bench/lib/families.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const FIXED = new Set(['## Headline', '## Machine', '## Method']);

test('a report that reruns every family keeps each hand-written section and paragraph of docs/BENCHMARKS.md', async () => {
  const doc = fs.readFileSync(path.join(root, 'docs/BENCHMARKS.md'), 'utf8');
  const families = await loadFamilies();
  const headingOf = (f: { title: string; name: string }): string => `## ${f.title} (\`${f.name}\`)`;
  const headings = new Set(families.map(headingOf));
  const kept = keptSections(doc, headings, headings, FIXED);
  let hand = 0;
  for (const s of splitSections(doc)) {
    if (FIXED.has(s.heading)) continue;
    const fam = families.find((f) => headingOf(f) === s.heading);
    if (!fam) {
      hand++;
      assert.ok(kept.after.includes(`${s.heading}\n${s.body}`.trimEnd()), `kept whole: ${s.heading}`);
      continue;
    }
    // What the report would replace is its own text only: the description it writes, then the
    // table, its numbered notes and the charts (no paragraph written by hand).
    const replaced = s.body.slice(0, generatedLength(s.body));
    const prose = replaced
      .split('\n')
      .filter((l) => l !== '' && l !== GENERATED_END && !l.startsWith('|') && !/^\d+\. /.test(l) && !l.startsWith('!['))
      .join(' ');
    // The description as the report wrote it then (families' descriptions change between runs):
    // never a dated measurement or a bold lead, which only hand-written paragraphs have.
    assert.doesNotMatch(prose, /\*\*|\b20\d\d-\d\d-\d\d\b/, `only the report's text is replaced in ${s.heading}`);
    assert.equal(`${replaced}${kept.within.get(s.heading) ?? ''}`.replace(/\s+/g, ''), s.body.replace(/\s+/g, ''), `the rest is kept: ${s.heading}`);
  }
  assert.ok(hand > 10, `the file has hand-written sections (${hand})`);
});

test('kept sections: a rerun family keeps its subsections, a family not run stays whole, fences are not headings', () => {
  const old = [
    '# Benchmarks',
    'generated scope',
    '## Headline',
    'old headline',
    '## Machine',
    'old machine',
    '## One (`one`)',
    'the description of one',
    '',
    '| tier | ms |',
    '| :--- | ---: |',
    '| 1 | 2 |',
    '',
    '1. a note',
    '',
    '![a chart](bench/one.svg)',
    '',
    '### Measured by hand, 2026-12-01',
    'a figure',
    '```sh',
    '## not a heading',
    '```',
    '## Two (`two`)',
    '| old table of two |',
    '## Where the time went (issue 1), 2026-12-02',
    'a hand section',
    '### its part',
    'more',
  ].join('\n');
  const k = keptSections(old, new Set(['## One (`one`)']), new Set(['## One (`one`)', '## Two (`two`)']), FIXED);
  assert.equal(k.within.get('## One (`one`)'), '### Measured by hand, 2026-12-01\na figure\n```sh\n## not a heading\n```');
  assert.deepEqual(k.after, ['## Two (`two`)\n| old table of two |', '## Where the time went (issue 1), 2026-12-02\na hand section\n### its part\nmore']);
  assert.deepEqual(keptSections('', new Set(), new Set(), FIXED), { within: new Map(), after: [] });
  // A section the report wrote with its end line: what follows the line is kept, whatever it is.
  const marked = ['## One (`one`)', 'text', GENERATED_END, '1. a hand note', '| a hand table |'].join('\n');
  assert.equal(keptSections(marked, new Set(['## One (`one`)']), new Set(['## One (`one`)']), FIXED).within.get('## One (`one`)'), '1. a hand note\n| a hand table |');
});
