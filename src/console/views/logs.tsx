// The log viewer. One component, LogChunk, renders a page of a step's lines (as the API pages them) and
// what comes after it: the next page loaded when scrolled to, a wait for more output while the step
// runs, or the end. The log page, its search results and the run page's collapsible steps all use it.

import { ansiSpans } from '../ansi.ts';
import { ShortId, StatusBadge } from './format.tsx';
import { CopyButtons } from './layout.tsx';

export interface LogLineView {
  seq: number;
  stream: string;
  line: string;
}

/** Where a chunk sits, which decides its line links and whether its lines carry anchors. */
export type LogView = 'window' | 'search' | 'embed';

export interface LogChunkProps {
  lines: LogLineView[];
  view: LogView;
  /** The log page of this step. */
  logUrl: string;
  /** The URL of the next chunk, given the seq to read after. */
  nextUrl: (after: number) => string;
  lastSeq: number;
  /** More lines are stored than this chunk holds. */
  more: boolean;
  /** The step has ended and every line has been read. */
  complete: boolean;
  stepStatus: string;
  /** Chunks already shown in this window, this one included: a window stops growing at MAX_WINDOW_CHUNKS. */
  chunk: number;
}

/** Lines per chunk: one API page, small enough to render at once. */
export const LOG_CHUNK_LINES = 1000;
/** A window holds at most this many chunks, so a page never holds more than 20,000 lines; a link goes on. */
export const MAX_WINDOW_CHUNKS = 20;
/** Lines shown before an anchored line when the log page opens at it (console.js opens a range the same way). */
const CONTEXT_LINES = 20;

/** The log page's URL that opens at line `seq` and marks it. */
export function lineUrl(logUrl: string, seq: number, until = seq): string {
  return `${logUrl}?after=${Math.max(0, seq - 1 - CONTEXT_LINES)}#L${seq}${until !== seq ? `-L${until}` : ''}`;
}

export function LogChunk(props: LogChunkProps) {
  return (
    <>
      {props.lines.map((line) => (
        <LogLine
          key={line.seq}
          line={line}
          anchored={props.view === 'window'}
          href={props.view === 'window' ? `#L${line.seq}` : lineUrl(props.logUrl, line.seq)}
        />
      ))}
      <LogContinuation {...props} />
    </>
  );
}

function LogLine({ line, anchored, href }: { line: LogLineView; anchored: boolean; href: string }) {
  return (
    <div class={`log-line log-${line.stream}`} id={anchored ? `L${line.seq}` : undefined} data-seq={line.seq}>
      <a class="ln" href={href} tabindex={-1}>
        {line.seq}
      </a>
      <span class="lt">
        {ansiSpans(line.line).map((span, i) =>
          span.classes ? (
            <span key={i} class={span.classes}>
              {span.text}
            </span>
          ) : (
            span.text
          ),
        )}
      </span>
    </div>
  );
}

/** What follows a chunk: more lines as the reader reaches them, new output as it is written, or the end. */
function LogContinuation({ view, logUrl, nextUrl, lastSeq, more, complete, stepStatus, chunk }: LogChunkProps) {
  if (complete && !more) {
    return (
      <p class="log-end muted">
        {view === 'search' ? 'No more lines hold it' : 'End of the log'} · step <StatusBadge status={stepStatus} />
      </p>
    );
  }
  if (chunk >= MAX_WINDOW_CHUNKS && view !== 'search') {
    return (
      <p class="log-end">
        <a href={`${logUrl}?after=${lastSeq}`}>Go on from line {lastSeq + 1}</a>
      </p>
    );
  }
  // A page scrolled to its end loads the next chunk at once; a running step's output is asked for again every 2 s.
  const trigger = more ? 'intersect once' : 'load delay:2s';
  return (
    <p class="log-end muted" hx-get={nextUrl(lastSeq)} hx-trigger={trigger} hx-swap="outerHTML">
      {more ? (
        <a href={view === 'search' ? nextUrl(lastSeq) : `${logUrl}?after=${lastSeq}`}>More lines</a>
      ) : (
        <>
          Waiting for more output · step <StatusBadge status={stepStatus} />
        </>
      )}
    </p>
  );
}

export interface StepLogPageProps {
  orgPath: string;
  step: { id: string; stepName: string; stepType: string; status: string; pipelineRunId: string };
  logUrl: string;
  /** The window's first line is the one after this seq. */
  after: number;
  search?: string;
  first: Omit<LogChunkProps, 'view' | 'logUrl' | 'chunk'>;
}

/** A step's whole log: a window of its lines with anchors, or the lines a search found. */
export function StepLogPage({ orgPath, step, logUrl, after, search, first }: StepLogPageProps) {
  return (
    <>
      <h1>
        Log of {step.stepName} <StatusBadge status={step.status} /> <CopyButtons id={step.id} what="step" />
      </h1>
      <p class="muted">
        Run <a href={`${orgPath}/runs/${encodeURIComponent(step.pipelineRunId)}`}>{<ShortId id={step.pipelineRunId} />}</a> · step type{' '}
        <code>{step.stepType}</code>
      </p>
      <div class="log-tools">
        <search>
          <form method="get" action={logUrl} class="inline-form">
            <label for="log-search">Find in log</label>
            <input id="log-search" type="search" name="q" value={search ?? ''} maxLength={200} />
            <button type="submit">Find</button>
          </form>
        </search>
        {/* The line numbers are links for the mouse (one tab stop each would bury the page): from the keyboard, a line or a range is marked here. */}
        <form method="get" action={logUrl} class="inline-form">
          <label for="log-lines">Mark lines</label>
          <input id="log-lines" type="text" name="lines" inputmode="numeric" pattern="[0-9]+(-[0-9]+)?" maxLength={23} placeholder="120-140" />
          <button type="submit">Mark</button>
        </form>
        <a href={`${logUrl}/raw`} download>
          Raw log
        </a>
        <a href={`${logUrl}?after=0`}>From the start</a>
        <a href={`${logUrl}?tail=${LOG_CHUNK_LINES}`}>Last lines</a>
        <label class="check">
          <input type="checkbox" id="log-follow" /> Follow the end
        </label>
      </div>
      {search !== undefined && <h2>Lines that hold “{search}”</h2>}
      <div id="log" class="log" data-after={after} data-view={search === undefined ? 'window' : 'search'}>
        <LogChunk {...first} view={search === undefined ? 'window' : 'search'} logUrl={logUrl} chunk={1} />
      </div>
    </>
  );
}
