import type { Handlers } from '../common/operation.ts';
import type { systemOperations } from './operations.ts';
import { VERSION } from './version.ts';

export const version = async () => ({ version: VERSION });

export const systemHandlers = { version } satisfies Handlers<typeof systemOperations>;
