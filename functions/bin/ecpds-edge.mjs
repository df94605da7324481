#!/usr/bin/env node
// The command line runs the TypeScript sources directly through tsx's loader.
import { register } from 'tsx/esm/api';

register();
await import('../node/cli.ts');
