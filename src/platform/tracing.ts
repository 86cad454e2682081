// Opt-in tracing (docs/operations.md#tracing). With OTEL_EXPORTER_OTLP_ENDPOINT unset, nothing of
// OpenTelemetry is loaded: this file imports none of it, the HTTP app adds no hook, log lines get no
// mixin, and withSpan calls its function directly. Set, startTracing loads the SDK, the OTLP/HTTP
// exporter and three instrumentations chosen explicitly (Node's http, pg, and Fastify through
// @fastify/otel's plugin): not the auto-instrumentation bundle, which loads dozens.

import type { FastifyPluginCallback } from 'fastify';

interface ActiveTracing {
  api: typeof import('@opentelemetry/api');
  tracer: import('@opentelemetry/api').Tracer;
}

let active: ActiveTracing | undefined;

export interface Tracing {
  /** Registered first on the HTTP app: a span per request, with its route and hooks. */
  fastifyPlugin: FastifyPluginCallback;
  /** For pino's `mixin`: the trace and span ids of the active span, on every log line. */
  logFields(): Record<string, string>;
  /** Exports the spans still buffered, then stops. */
  shutdown(): Promise<void>;
}

/** tracingEnabled tells whether the environment asks for tracing. */
export function tracingEnabled(env: NodeJS.ProcessEnv = process.env): boolean {
  return Boolean(env.OTEL_EXPORTER_OTLP_ENDPOINT || env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT);
}

/**
 * startTracing sets OpenTelemetry up for this process. It must run before `pg` is first imported:
 * Plinth is ES modules, so pg is instrumented through import-in-the-middle's loader hook, which only
 * sees modules imported after it is registered (cli.ts imports the rest of Plinth after this).
 */
export async function startTracing(serviceName: string): Promise<Tracing> {
  const { register } = await import('node:module');
  // Only pg is intercepted: wrapping every module Plinth imports would slow its start-up for nothing
  // (Fastify reaches node:http through require, which the instrumentations patch without the hook).
  register('@opentelemetry/instrumentation/hook.mjs', import.meta.url, { data: { include: ['pg'] } });
  const [
    api,
    { NodeTracerProvider, BatchSpanProcessor },
    { OTLPTraceExporter },
    { registerInstrumentations },
    { HttpInstrumentation },
    { PgInstrumentation },
    { resourceFromAttributes },
    fastifyOtel,
  ] = await Promise.all([
    import('@opentelemetry/api'),
    import('@opentelemetry/sdk-trace-node'),
    import('@opentelemetry/exporter-trace-otlp-http'),
    import('@opentelemetry/instrumentation'),
    import('@opentelemetry/instrumentation-http'),
    import('@opentelemetry/instrumentation-pg'),
    import('@opentelemetry/resources'),
    import('@fastify/otel'),
  ]);
  // The exporter reads OTEL_EXPORTER_OTLP_ENDPOINT (and _HEADERS, _TIMEOUT) itself.
  const provider = new NodeTracerProvider({
    resource: resourceFromAttributes({ 'service.name': serviceName }),
    spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter())],
  });
  provider.register();
  const fastify = new fastifyOtel.FastifyOtelInstrumentation({
    requestHook: (span, request) => {
      const params = request.params as { id?: unknown } | undefined;
      span.setAttribute('plinth.request_id', request.id);
      if (typeof params?.id === 'string') span.setAttribute('plinth.resource_id', params.id);
    },
  });
  registerInstrumentations({
    instrumentations: [
      new HttpInstrumentation({ ignoreIncomingRequestHook: (request) => request.url === '/metrics' }),
      new PgInstrumentation({ requireParentSpan: true }),
      fastify,
    ],
  });
  active = { api, tracer: api.trace.getTracer('plinth') };
  return {
    fastifyPlugin: fastify.plugin() as FastifyPluginCallback,
    logFields: (): Record<string, string> => {
      const span = api.trace.getActiveSpan();
      if (!span) return {};
      const { traceId, spanId } = span.spanContext();
      return { trace_id: traceId, span_id: spanId };
    },
    shutdown: async () => {
      active = undefined;
      await provider.shutdown();
    },
  };
}

/** withSpan runs `fn` in a span of its own with `attributes` (run and step ids); with tracing off it just runs `fn`. */
export function withSpan<T>(name: string, attributes: Record<string, string | number>, fn: () => Promise<T>): Promise<T> {
  if (!active) return fn();
  const { api, tracer } = active;
  return tracer.startActiveSpan(name, { attributes }, async (span) => {
    try {
      return await fn();
    } catch (error) {
      span.recordException(error instanceof Error ? error : String(error));
      span.setStatus({ code: api.SpanStatusCode.ERROR });
      throw error;
    } finally {
      span.end();
    }
  });
}

/** setSpanAttributes adds attributes to the active span, if tracing is on and a span is active. */
export function setSpanAttributes(attributes: Record<string, string | number>): void {
  active?.api.trace.getActiveSpan()?.setAttributes(attributes);
}
