/** One Server-Sent Event as a client receives it. */
export interface SseEvent {
  event: string;
  id?: string;
  data: any;
}

/**
 * SseReader reads a stream's events as they arrive: `next` waits for the next one that matches, and
 * `received` holds every event read so far.
 */
export class SseReader {
  readonly received: SseEvent[] = [];
  /** The last id the stream gave, with an event or alone (as a browser's EventSource keeps it). */
  lastId: string | undefined;
  private buffer = '';
  private waiting: (() => void) | undefined;
  private readonly done: Promise<void>;

  constructor(
    readonly response: Response,
    private readonly controller: AbortController,
  ) {
    this.done = this.pump();
  }

  private async pump() {
    const decoder = new TextDecoder();
    try {
      for await (const chunk of this.response.body as unknown as AsyncIterable<Uint8Array>) {
        this.buffer += decoder.decode(chunk, { stream: true });
        for (let end = this.buffer.indexOf('\n\n'); end >= 0; end = this.buffer.indexOf('\n\n')) {
          const block = this.buffer.slice(0, end);
          this.buffer = this.buffer.slice(end + 2);
          const fields = Object.fromEntries(
            block
              .split('\n')
              .filter((l) => !l.startsWith(':'))
              .map((l) => [l.slice(0, l.indexOf(':')), l.slice(l.indexOf(':') + 2)]),
          );
          if (fields.id !== undefined) this.lastId = fields.id;
          if (fields.event) this.received.push({ event: fields.event, id: fields.id, data: JSON.parse(fields.data) });
          this.waiting?.();
        }
      }
    } catch {
      // aborted by close()
    }
  }

  /** Waits up to `timeoutMs` for a received event (from index `from` on) that matches, and answers it. */
  async next(match: (e: SseEvent) => boolean, from = 0, timeoutMs = 10_000): Promise<SseEvent> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const found = this.received.slice(from).find(match);
      if (found) return found;
      if (Date.now() > deadline) throw new Error(`no matching event within ${timeoutMs} ms; received ${JSON.stringify(this.received)}`);
      await new Promise<void>((resolve) => {
        this.waiting = resolve;
        setTimeout(resolve, 100);
      });
    }
  }

  async close() {
    this.controller.abort();
    await this.done;
  }
}

/** openSse opens a stream with the headers given; a response that is not a stream is answered as is. */
export async function openSse(url: string, headers: Record<string, string>): Promise<SseReader> {
  const controller = new AbortController();
  const response = await fetch(url, { headers: { accept: 'text/event-stream', ...headers }, signal: controller.signal });
  return new SseReader(response, controller);
}
