#!/usr/bin/env node
// Runs the TypeScript sources through tsx, so `plinth` works from a checkout without a build step.
import { register } from 'tsx/esm/api';
register();
await import('../src/cli.ts');
