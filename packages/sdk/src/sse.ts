// A Server-Sent Events parser over fetch's body stream. EventSource cannot send an Authorization
// header, so the SDK reads the stream itself; this follows the WHATWG event-stream grammar.

export interface SseEvent {
  /** The `event` field, `message` when none was sent. */
  event: string;
  data: string;
  /** The last `id` field seen on the stream so far (what to send back as Last-Event-ID). */
  id?: string;
}

/** parseSse yields each event of an event stream as it completes; comments and `retry` are skipped. */
export async function* parseSse(body: ReadableStream<Uint8Array>): AsyncGenerator<SseEvent> {
  const decoder = new TextDecoder();
  let buffer = '';
  let event = '';
  let data: string[] = [];
  let lastId: string | undefined;
  const reader = body.getReader();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      buffer += done ? decoder.decode() : decoder.decode(value, { stream: true });
      for (;;) {
        const end = buffer.search(/\r\n|\r|\n/);
        // A lone CR at the very end may be the first half of a CRLF still in flight.
        if (end < 0 || (!done && end === buffer.length - 1 && buffer[end] === '\r')) break;
        const line = buffer.slice(0, end);
        buffer = buffer.slice(end + (buffer.startsWith('\r\n', end) ? 2 : 1));
        if (line === '') {
          if (data.length > 0) yield { event: event || 'message', data: data.join('\n'), ...(lastId !== undefined ? { id: lastId } : {}) };
          event = '';
          data = [];
          continue;
        }
        if (line.startsWith(':')) continue;
        const colon = line.indexOf(':');
        const field = colon < 0 ? line : line.slice(0, colon);
        let value = colon < 0 ? '' : line.slice(colon + 1);
        if (value.startsWith(' ')) value = value.slice(1);
        if (field === 'event') event = value;
        else if (field === 'data') data.push(value);
        else if (field === 'id' && !value.includes('\u0000')) lastId = value;
      }
      // An event not ended by a blank line when the stream closes is incomplete: it is dropped.
      if (done) return;
    }
  } finally {
    await reader.cancel().catch(() => {});
  }
}
