import os from 'node:os';
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';

/**
 * What the fuzz suite measures about the server's responsiveness while it runs: the event-loop delay
 * (perf_hooks.monitorEventLoopDelay), the part of each delay this process spent on the CPU (a delay
 * with no CPU behind it is the machine's scheduler, not a blocked loop), and the machine's load.
 */
export class Responsiveness {
  private readonly histogram = monitorEventLoopDelay({ resolution: 10 });
  private cpuBlockedMaxMs = 0;
  private timer?: NodeJS.Timeout;
  private peakLoadPerCore = 0;

  start(): void {
    this.histogram.enable();
    let lastWall = performance.now();
    let lastCpu = process.cpuUsage();
    this.timer = setInterval(() => {
      const wall = performance.now();
      const cpu = process.cpuUsage(lastCpu);
      const cpuMs = (cpu.user + cpu.system) / 1000;
      this.cpuBlockedMaxMs = Math.max(this.cpuBlockedMaxMs, Math.min(wall - lastWall, cpuMs) - 5);
      this.peakLoadPerCore = Math.max(this.peakLoadPerCore, os.loadavg()[0] / os.availableParallelism());
      lastWall = wall;
      lastCpu = process.cpuUsage();
    }, 5);
  }

  stop(): void {
    this.histogram.disable();
    clearInterval(this.timer);
  }

  /** The longest event-loop delay seen, in ms. */
  get maxDelayMs(): number {
    return this.histogram.max / 1e6;
  }

  /** The longest stretch between two timer ticks that this process spent computing, in ms. */
  get cpuBlockedMs(): number {
    return this.cpuBlockedMaxMs;
  }

  /** More runnable work than the cores can serve (a shared, busy machine): wall-clock delays then say little. */
  get overloaded(): boolean {
    return this.peakLoadPerCore > 1.5;
  }

  describe(): string {
    return `event-loop delay max ${this.maxDelayMs.toFixed(1)} ms (of which on the CPU at most ${this.cpuBlockedMs.toFixed(1)} ms), ` +
      `load per core up to ${this.peakLoadPerCore.toFixed(1)}`;
  }
}
