#!/usr/bin/env node
// The `drivewire` binary: TypeScript sources run through tsx, so `npx drivewire` needs no build step.
import { register } from 'tsx/esm/api';

register();
await import('./cli.ts');
