import { isLoopbackHost } from '../loopback.ts';

/**
 * metricsTokenProblem says why a metrics listener on `host` may not run as configured, or undefined when
 * it may: off loopback it must have a token. A scrape tells whoever reaches it what the installation
 * runs, how busy it is and which build it is; an operator who set the address but forgot the token
 * wants to hear so at start, not to find the port serving all of that to the network.
 */
export function metricsTokenProblem(host: string, token: string | undefined): string | undefined {
  if (token || isLoopbackHost(host)) return undefined;
  return `PLINTH_METRICS_HOST is ${host}, which is not loopback: set PLINTH_METRICS_TOKEN too (scrapes then send it as a bearer token), or listen on 127.0.0.1`;
}
