// What a rewrite of docs/BENCHMARKS.md keeps of the file it replaces. The report generates the
// headline, the machine, the method and, per family it ran, the head of that family's section;
// measurements recorded by hand live beside them (dated text after a family's generated part,
// and `##` sections of their own), and a run of a few families (`--only`) leaves the others'
// sections as they were. Dropping either would lose measurements that exist nowhere else.

/** One `## ` section of a Markdown file: its heading line and everything up to the next one. */
interface Section {
  heading: string;
  body: string;
}

/** The file's `## ` sections in order (the text before the first is not a section). */
export function splitSections(doc: string): Section[] {
  const out: Section[] = [];
  let current: Section | undefined;
  let fenced = false;
  for (const line of doc.split('\n')) {
    if (line.startsWith('```')) fenced = !fenced;
    if (!fenced && line.startsWith('## ')) {
      current = { heading: line, body: '' };
      out.push(current);
    } else if (current) current.body += `${line}\n`;
  }
  return out;
}

/** The line the report writes after a family's generated text (its description, table, notes and charts). */
export const GENERATED_END = '<!-- the report writes what is above; measurements recorded by hand follow -->';

/**
 * Where the report's own text of a family section's `body` ends: after GENERATED_END, or in a
 * file written before that line existed, after the section's first table and the numbered
 * notes, blank lines and chart images that follow it (what renderMarkdown and the charts
 * write). The text after it was written by hand.
 */
export function generatedLength(body: string): number {
  const lines = body.split('\n');
  const marker = lines.indexOf(GENERATED_END);
  let end = 0;
  if (marker >= 0) end = marker + 1;
  else {
    let i = lines.findIndex((l) => l.startsWith('|'));
    if (i < 0) return 0;
    while (i < lines.length && lines[i]!.startsWith('|')) i++;
    end = i;
    for (; i < lines.length && (lines[i] === '' || /^\d+\. /.test(lines[i]!) || lines[i]!.startsWith('![')); i++) if (lines[i] !== '') end = i + 1;
  }
  return lines.slice(0, end).join('\n').length + (end > 0 ? 1 : 0);
}

export interface KeptSections {
  /** What was written by hand in each family section this run regenerates (generatedLength), by its heading. */
  within: Map<string, string>;
  /** Whole sections to append after the generated ones: families not run now, then hand-written ones. */
  after: string[];
}

/**
 * What to keep of `old` (the current file) when this run generates `generated` (the `## `
 * headings it writes) and the report can generate any of `familyHeadings` (every family's
 * heading as the report writes it) or `fixed` (the headline, machine and method headings, whose
 * whole text is the report's).
 */
export function keptSections(old: string, generated: Set<string>, familyHeadings: Set<string>, fixed: Set<string>): KeptSections {
  const within = new Map<string, string>();
  const notRun: string[] = [];
  const hand: string[] = [];
  for (const s of splitSections(old)) {
    const text = `${s.heading}\n${s.body}`.trimEnd();
    if (fixed.has(s.heading)) continue;
    if (generated.has(s.heading)) {
      const byHand = s.body.slice(generatedLength(s.body)).trim();
      if (byHand !== '') within.set(s.heading, byHand);
    } else if (familyHeadings.has(s.heading)) notRun.push(text);
    else hand.push(text);
  }
  return { within, after: [...notRun, ...hand] };
}
