import { readFileSync } from 'node:fs';
import os from 'node:os';
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';

/**
 * CPU time of this process's main thread, the event loop's, in ms: its utime and stime from /proc (in
 * clock ticks of 10 ms). process.cpuUsage() counts every thread, and the thread pool's and the garbage
 * collector's work does not hold the loop. Elsewhere than Linux, the whole process's.
 */
function loopThreadCpuMs(): number {
  try {
    const stat = readFileSync(`/proc/self/task/${process.pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) * 10;
  } catch {
    const usage = process.cpuUsage();
    return (usage.user + usage.system) / 1000;
  }
}

/**
 * What the fuzz suite measures about the server's responsiveness while it runs: the event-loop delay
 * (perf_hooks.monitorEventLoopDelay), the part of each delay the loop's own thread spent on the CPU (a
 * delay with no CPU behind it is the machine's scheduler, not a blocked loop), and the machine's load.
 */
export class Responsiveness {
  private readonly histogram = monitorEventLoopDelay({ resolution: 10 });
  private cpuBlockedMaxMs = 0;
  private timer?: NodeJS.Timeout;
  private peakLoadPerCore = 0;

  start(): void {
    this.histogram.enable();
    let lastWall = performance.now();
    let lastCpu = loopThreadCpuMs();
    this.timer = setInterval(() => {
      const wall = performance.now();
      const cpu = loopThreadCpuMs();
      // The ticks' 10 ms granularity is allowed for beside the timer's own 5 ms.
      this.cpuBlockedMaxMs = Math.max(this.cpuBlockedMaxMs, Math.min(wall - lastWall, cpu - lastCpu) - 15);
      this.peakLoadPerCore = Math.max(this.peakLoadPerCore, os.loadavg()[0] / os.availableParallelism());
      lastWall = wall;
      lastCpu = cpu;
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
    return (
      `event-loop delay max ${this.maxDelayMs.toFixed(1)} ms (of which on the CPU at most ${this.cpuBlockedMs.toFixed(1)} ms), ` +
      `load per core up to ${this.peakLoadPerCore.toFixed(1)}`
    );
  }
}
